r"""Errors from inspect and the providers as one readable message (the lead uses
`error_message(exc)` in cli/main.py's catch-all instead of the first line of `str(exc)`).

inspect's PrerequisiteError is written for its rich console: "[bold]ERROR[/bold]: OpenAI API
requires optional dependencies. Install with:\n\n[bold]pip install openai[/bold]". Cut at its
first line it loses the one thing a user needs, the install command.
"""

from __future__ import annotations

import re

# the pip package inspect asks for -> this package's extra that installs it
EXTRAS = {"openai": "openai", "google-genai": "google"}
_MARKUP = re.compile(r"\[/?(?:bold|italic|underline|dim|red|green|yellow|blue|magenta|cyan|white|bright_black)\]")


def error_message(exc: BaseException, limit: int = 600) -> str:
    """The whole message on one line, rich markup removed, with the extra to install when a
    provider package is missing."""
    text = _MARKUP.sub("", str(exc))
    text = re.sub(r"^\s*ERROR:\s*", "", text.strip())
    text = " ".join(line.strip() for line in text.splitlines() if line.strip())
    missing = re.search(r"pip install ((?:[A-Za-z0-9_.\-]+\s?)+)", text)
    if missing and "requires optional dependencies" in text:
        extras = sorted({EXTRAS[p] for p in missing.group(1).split() if p in EXTRAS})
        if extras:
            text += f" (or: pip install 'compaction-eval[{','.join(extras)}]')"
    return text if len(text) <= limit else text[: limit - 3] + "..."
