"""The values of the credentials in the environment, kept out of everything the tool writes.

Why: a model answer can echo the API key it was called with (a trace that contains the key, a
prompt that asks for it), and then the key reached results.json, the report, inspect's log and
the generate cache. Shape-based redaction (`corpus.redact`, `--redact`) does not know a key of
a new shape; the environment does. Every model answer (compaction.session) and every file a run
writes (contracts.runfiles) has these values replaced, with or without `--redact`.

A credential is the value of an environment variable whose name says so (`ANTHROPIC_API_KEY`,
`GITHUB_TOKEN`, `DB_PASSWORD`, ...) and that looks like one: at least 8 characters, no
whitespace, not only digits, not a path (`SSH_AUTH_SOCK`, `GOOGLE_APPLICATION_CREDENTIALS` name
files). Shorter or plainer values would replace ordinary words and numbers.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

CREDENTIAL_NAME = re.compile(r"API_?KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL|AUTH", re.IGNORECASE)
MIN_LENGTH = 8
REPLACEMENT = "[REDACTED:credential]"


def credential_values(environ: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """(name, value) of each credential in the environment, longest value first (so a value
    that contains another is replaced whole).

    >>> credential_values({"ANTHROPIC_API_KEY": "sk-ant-0123456789", "HOME": "/home/me", "GH_TOKEN": "short"})
    [('ANTHROPIC_API_KEY', 'sk-ant-0123456789')]
    """
    env = os.environ if environ is None else environ
    found = [(name, value) for name, value in env.items() if CREDENTIAL_NAME.search(name) and _looks_secret(value)]
    return sorted(found, key=lambda item: -len(item[1]))


def _looks_secret(value: str) -> bool:
    return len(value) >= MIN_LENGTH and not value.isdigit() and not value.startswith(("/", "~", ".")) and not any(c.isspace() for c in value)


def credentials_in(data: bytes | str, environ: Mapping[str, str] | None = None) -> list[str]:
    """Names of the credentials whose value occurs in `data` (raw or JSON-escaped)."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return [name for name, value in credential_values(environ) if any(form in text for form in _forms(value))]


def scrub_credentials(text: str, environ: Mapping[str, str] | None = None) -> str:
    """`text` with every credential value replaced by `[REDACTED:credential]`.

    >>> scrub_credentials('{"echo": "key sk-ant-0123456789"}', {"ANTHROPIC_API_KEY": "sk-ant-0123456789"})
    '{"echo": "key [REDACTED:credential]"}'
    """
    for _name, value in credential_values(environ):
        for form in _forms(value):
            if form in text:
                text = text.replace(form, REPLACEMENT)
    return text


def scrub_data(data: Any, environ: Mapping[str, str] | None = None) -> Any:
    """A copy of JSON data with every credential value replaced in its strings (object keys
    included); `data` itself when no credential occurs in it.

    >>> scrub_data({"argv": ["curl", "-H", "x-api-key: sk-ant-0123456789"]}, {"ANTHROPIC_API_KEY": "sk-ant-0123456789"})
    {'argv': ['curl', '-H', 'x-api-key: [REDACTED:credential]']}
    """
    if not credential_values(environ) or not credentials_in(json.dumps(data, ensure_ascii=False), environ):
        return data
    return _walk(data, lambda text: scrub_credentials(text, environ))


def _walk(data: Any, scrub: Callable[[str], str]) -> Any:
    if isinstance(data, str):
        return scrub(data)
    if isinstance(data, list):
        return [_walk(v, scrub) for v in data]
    if isinstance(data, dict):
        return {scrub(k) if isinstance(k, str) else k: _walk(v, scrub) for k, v in data.items()}
    return data


def _forms(value: str) -> tuple[str, ...]:
    """The value as it appears in text and inside a JSON string (escaped, when that differs)."""
    escaped = json.dumps(value, ensure_ascii=False)[1:-1]
    return (value,) if escaped == value else (value, escaped)
