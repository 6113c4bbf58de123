"""Replace secret-looking strings with `[REDACTED:<kind>]` before text reaches a model.

Kinds: `anthropic_key` / `openai_key` (sk-...), `stripe_key` (sk_live_/rk_test_...),
`aws_access_key` (AKIA...), `google_api_key` (AIza...), `onepassword_secret_key` (A3-...),
`github_token` (ghp_/gho_/ghu_/ghs_/ghr_/github_pat_), `gitlab_token` (glpat-...),
`huggingface_token` (hf_...), `slack_token` (xox?-...), `jwt` (three base64url parts, the
first two JSON: `eyJ...`), `url_password` (the password of `postgres://user:pw@host`, any
scheme), `password` (the value of `password=`, `passwd:`, `secret=`, `api_key=`,
`SessionToken:` ...), `bearer_token` (`Bearer <token>`), `private_key` (PEM private key
blocks), and `secret_field`: in JSON (tool input, structured output), the string value of a
key named like a credential (`password`, `token`, `secret`, `apiKey`, `SessionToken`, ...),
whatever it looks like. Patterns are anchored on distinctive prefixes so that ordinary prose,
paths and numbers are left alone.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from itertools import pairwise
from pathlib import Path
from typing import Any

from compaction_eval.contracts.traces import read_trace_bytes

# Order matters: a private key block first (it contains anything), the generic
# `password=` form last (its value might itself be a token of another kind).
PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("private_key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)", re.DOTALL)),
    ("anthropic_key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{8,}")),
    ("openai_key", re.compile(r"\bsk-(?:proj-|live-|test-)?[A-Za-z0-9_\-]{4,}")),
    ("stripe_key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{8,}")),
    ("gitlab_token", re.compile(r"\bgl(?:pat|dt|rt|ptt|cbt|oas)-[A-Za-z0-9_\-]{20,}")),
    ("huggingface_token", re.compile(r"\bhf_[A-Za-z0-9]{30,}")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")),
    ("url_password", re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]{1,20}://[^\s:/@\[\]]{1,256}:(?P<secret>(?!\[REDACTED)[^\s@/\[\]]{1,256})@")),
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
            r"(?i)(?<![a-z0-9])[a-z0-9_\-]*(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token|session[_-]?token|refresh[_-]?token)[a-z0-9_\-]*[\"']?\s{0,3}[=:]\s{0,3}[\"']?(?P<secret>(?!\[REDACTED)[^\s\"'&;,]{4,})"
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


# A JSON key that names a credential, in any spelling (`password`, `db_password`, `apiKey`,
# `SessionToken`, `client-secret`): split into words, one of them is one of these. `tokens`
# (`max_tokens`) and `key` alone (`sort_key`) are not.
SECRET_KEY_WORDS = frozenset({"password", "passwd", "pwd", "passphrase", "token", "secret", "apikey", "credential", "credentials", "privatekey"})
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def is_secret_key(key: str) -> bool:
    """Whether a JSON object key names a credential (see SECRET_KEY_WORDS)."""
    words = re.split(r"[^a-z0-9]+", _CAMEL.sub("_", key).lower())
    joined = {a + b for a, b in pairwise(words)}  # api_key -> apikey, private_key -> privatekey
    return bool(SECRET_KEY_WORDS & (set(words) | joined))


def redact_json(data: Any, counts: Counter | None = None) -> Any:
    """A copy of JSON data with every string redacted, object keys included (a tool call's
    input can use a secret as a key: `{"sk-live-...": true}`), and the string value of a key
    that names a credential replaced whatever it looks like (`{"password": "hunter22"}`). Two
    keys that redact to the same text are kept apart by a `#2`, `#3` suffix."""
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
            if isinstance(k, str) and isinstance(v, str) and v and not v.startswith("[REDACTED") and is_secret_key(k):
                if counts is not None:
                    counts["secret_field"] += 1
                out[key] = "[REDACTED:secret_field]"
            else:
                out[key] = redact_json(v, counts)
        return out
    return data


def redact_labels(labels: Any) -> Any:
    """A copy of a `Labels` with the text and keys of its facts and avoid items redacted: what
    a report, the gate or `tune` shows of a redacted run's labels (the files still hold the
    secrets the model never saw)."""
    import dataclasses

    def fact(f: Any) -> Any:
        changes: dict[str, Any] = {"text": redact_text(f.text), "keys": tuple(redact_text(k) for k in f.keys)}
        if hasattr(f, "alt_keys"):
            changes["alt_keys"] = tuple(tuple(redact_text(k) for k in ks) for ks in f.alt_keys)
        return dataclasses.replace(f, **changes)

    return dataclasses.replace(labels, facts=tuple(fact(f) for f in labels.facts), avoid=tuple(fact(a) for a in labels.avoid))


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
