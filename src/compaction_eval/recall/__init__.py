"""The fact-recall suite: matchers -> per-fact verdicts -> per-prompt statistics -> results.json."""
