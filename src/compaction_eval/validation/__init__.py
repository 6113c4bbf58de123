"""Agreement of the matchers (and an LLM judge) with human gold judgments."""
