"""Secret-looking strings are replaced before text reaches a model; ordinary text is not."""

from __future__ import annotations

import gzip
import json
from collections import Counter

import pytest

from compaction_eval.corpus.redact import redact_file, redact_json, redact_text


@pytest.mark.parametrize(
    "text, kind",
    [
        ("export ANTHROPIC_API_KEY=sk-ant-api03-AbCdEf0123456789", "anthropic_key"),
        ("token sk-live-b1278c92258d24987638f1962aa941eb printed", "openai_key"),
        ("AWS_ACCESS_KEY_ID=AKIAYSE6AD7CYEXAMPLE", "aws_access_key"),
        ("git clone https://ghp_abcdefghijklmnopqrstuvwxyz0123@github.com/x/y", "github_token"),
        ("SLACK=xoxb-1234-5678-abcdefgh", "slack_token"),
        ('curl -H "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload"', "bearer_token"),
        ("db url: password=hunter22;", "password"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----", "private_key"),
    ],
)
def test_each_kind_is_replaced(text, kind):
    counts = Counter()
    out = redact_text(text, counts)
    assert f"[REDACTED:{kind}]" in out and counts[kind] == 1
    secret_bits = ("api03-AbCd", "b1278c92", "YSE6AD7C", "abcdefghijklmnop", "1234-5678", "eyJhbG", "hunter22", "MIIEow")
    assert not any(bit in out for bit in secret_bits)


def test_context_is_kept_and_ordinary_text_untouched():
    assert redact_text("password=hunter22") == "password=[REDACTED:password]"
    assert redact_text("Authorization: Bearer abcdefghijklmnop") == "Authorization: Bearer [REDACTED:bearer_token]"
    ordinary = "Fix src/billing/invoice.py: AssertionError 347 != 346; the password was wrong; task-1234 risk-based"
    assert redact_text(ordinary) == ordinary


def test_json_and_files_are_redacted_in_every_string(tmp_path):
    data = {"messages": [{"role": "user", "content": [{"type": "tool_result", "content": "AKIAYSE6AD7CYEXAMPLE"}]}], "id": "t"}
    assert "AKIA" not in json.dumps(redact_json(data))
    src = tmp_path / "t.json.gz"
    src.write_bytes(gzip.compress(json.dumps(data).encode()))
    dst = redact_file(src, tmp_path / "out" / "t.json.gz")
    assert json.loads(gzip.decompress(dst.read_bytes()))["messages"][0]["content"][0]["content"] == "[REDACTED:aws_access_key]"
