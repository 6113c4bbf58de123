"""Replace secret-looking strings with `[REDACTED:<kind>]` before text reaches a model.

Kinds: `anthropic_key` / `openai_key` (sk-...), `aws_access_key` (AKIA...), `google_api_key`
(AIza...), `onepassword_secret_key` (A3-...), `github_token`
(ghp_/gho_/ghu_/ghs_/ghr_/github_pat_), `slack_token` (xox?-...), `password` (the value of
`password=`, `passwd:`, `secret=`, `api_key=` ...), `bearer_token` (`Bearer <token>`),
`private_key` (PEM private key blocks). Patterns are anchored on distinctive prefixes so
that ordinary prose, paths and numbers are left alone.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from compaction_eval.contracts.traces import read_trace_bytes

# Order matters: a private key block first (it contains anything), the generic
# `password=` form last (its value might itself be a token of another kind).
PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("private_key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)", re.DOTALL)),
    ("anthropic_key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{8,}")),
    ("openai_key", re.compile(r"\bsk-(?:proj-|live-|test-)?[A-Za-z0-9_\-]{4,}")),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])")),
    ("onepassword_secret_key", re.compile(r"\bA3-[A-Z0-9]{6}-[A-Z0-9]{5,6}(?:-[A-Z0-9]{5}){4}\b")),
    ("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})")),
    ("slack_token", re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{8,}")),
    ("bearer_token", re.compile(r"\b[Bb]earer\s+(?P<secret>[A-Za-z0-9_\-\.=+/]{12,})")),
    (
        "password",
        re.compile(
            # the keyword may sit inside a longer name: aws_secret_access_key, client_secret, DB_PASSWORD
            r"(?i)(?<![a-z0-9])[a-z0-9_\-]*(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token)[a-z0-9_\-]*[\"']?\s{0,3}[=:]\s{0,3}[\"']?(?P<secret>(?!\[REDACTED)[^\s\"'&;,]{4,})"
        ),
    ),
]


def redact_text(text: str, counts: Counter | None = None) -> str:
    """`text` with every secret-looking string replaced by `[REDACTED:<kind>]`.

    Args:
        text: any text.
        counts: if given, incremented per kind replaced.
    """
    for kind, pattern in PATTERNS:
        def _sub(match: re.Match[str], kind: str = kind) -> str:
            if counts is not None:
                counts[kind] += 1
            # Patterns with a `secret` group keep their context (`password=`, `Bearer `).
            if "secret" in match.re.groupindex:
                start, end = match.span("secret")
                whole = match.group(0)
                base = match.start()
                return whole[: start - base] + f"[REDACTED:{kind}]" + whole[end - base :]
            return f"[REDACTED:{kind}]"

        text = pattern.sub(_sub, text)
    return text


def redact_json(data: Any, counts: Counter | None = None) -> Any:
    """A copy of JSON data with every string redacted, object keys included (a tool call's
    input can use a secret as a key: `{"sk-live-...": true}`). Two keys that redact to the
    same text are kept apart by a `#2`, `#3` suffix."""
    if isinstance(data, str):
        return redact_text(data, counts)
    if isinstance(data, list):
        return [redact_json(v, counts) for v in data]
    if isinstance(data, dict):
        out: dict[Any, Any] = {}
        for k, v in data.items():
            key = redact_text(k, counts) if isinstance(k, str) else k
            base, n = key, 1
            while key in out:
                n += 1
                key = f"{base}#{n}"
            out[key] = redact_json(v, counts)
        return out
    return data


def redact_trace(trace: dict[str, Any]) -> dict[str, Any]:
    """A copy of a trace@1 dict with its system prompt and messages redacted and, when anything
    was replaced, the count per kind in `metadata.redactions`. Public sessions still carry
    secrets their authors missed (API keys in `.env` dumps, a PGP private key): what is
    imported or shipped is redacted, and says how much."""
    counts: Counter = Counter()
    out = {**trace, "system": redact_text(trace.get("system", ""), counts), "messages": redact_json(trace["messages"], counts)}
    if counts:
        out["metadata"] = {**trace.get("metadata", {}), "redactions": dict(sorted(counts.items()))}
    return out


def redact_file(src: Path, dst: Path, counts: Counter | None = None) -> Path:
    """Write a redacted copy of a JSON trace file (any format; `.gz` kept as gzip)."""
    raw = read_trace_bytes(src)
    text = raw.decode("utf-8")
    try:
        out = json.dumps(redact_json(json.loads(text), counts), ensure_ascii=False)
    except ValueError:
        # JSON lines or something else textual: redact it as text.
        out = redact_text(text, counts)
    dst.parent.mkdir(parents=True, exist_ok=True)
    data = out.encode("utf-8")
    dst.write_bytes(gzip.compress(data, mtime=0) if dst.name.endswith(".gz") else data)
    return dst
