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


# Issue 24 item 6: the token shapes and the key-context values that leaked before.
JWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"


@pytest.mark.parametrize(
    "text, secret, kind",
    [
        ("git remote add o https://oauth2:glpat-Abc123xyz_Def456ghij789@gitlab.com/x/y", "glpat-Abc123xyz_Def456ghij789", "gitlab_token"),
        ("HF_TOKEN hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567 in the log", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567", "huggingface_token"),
        ("stripe charge with sk_live_51HqLyjWDarjtT1zdp7dc now", "sk_live_51HqLyjWDarjtT1zdp7dc", "stripe_key"),
        ("DATABASE_URL is postgres://app:Sup3rS3cret!@db.internal:5432/main", "Sup3rS3cret!", "url_password"),
        (f"the cookie held {JWT} all along", JWT, "jwt"),
        ('{"Credentials": {"AccessKeyId": "ASIA...", "SessionToken": "IQoJb3JpZ2luX2VjEHoaCXVzLWVhc3QtMSJHMEUCIQ"}}', "IQoJb3JpZ2luX2VjEHoaCXVzLWVhc3QtMSJHMEUCIQ", "password"),
    ],
)
def test_more_token_shapes_are_replaced(text, secret, kind):
    counts = Counter()
    out = redact_text(text, counts)
    assert secret not in out and f"[REDACTED:{kind}]" in out and counts[kind] == 1, out


def test_values_of_credential_keys_in_tool_input_are_replaced_whatever_they_look_like():
    tool_input = {"command": "login", "password": "hunter22", "auth": {"token": "abc", "apiKey": "plain", "SessionToken": "zz9",
                  "client-secret": "s"}, "max_tokens": 800, "sort_key": "name", "tokens": "many", "passwordless": True}
    counts = Counter()
    out = redact_json(tool_input, counts)
    assert out["password"] == out["auth"]["token"] == out["auth"]["apiKey"] == out["auth"]["SessionToken"] == "[REDACTED:secret_field]"
    assert out["auth"]["client-secret"] == "[REDACTED:secret_field]" and counts["secret_field"] == 5
    assert {k: out[k] for k in ("command", "max_tokens", "sort_key", "tokens", "passwordless")} == {
        "command": "login", "max_tokens": 800, "sort_key": "name", "tokens": "many", "passwordless": True}


def test_ordinary_urls_and_dotted_words_are_left_alone():
    text = "see https://example.com/a:b@c and http://host:8080/x, version eyJ.x, hf_ short, sk_live_ alone"
    assert redact_text(text) == text


def test_a_labels_token_reaches_no_report_gate_or_tune_of_a_redacted_run(tmp_path, capsys):
    from compaction_eval.cli.main import main
    from compaction_eval.contracts.runfiles import read_results
    from compaction_eval.gate.rules import fact_texts
    from compaction_eval.tune.suggest import _fact_index
    from conftest import ROOT

    token = "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    labels = tmp_path / "labels"
    labels.mkdir()
    text = (ROOT / "labels" / "synth-ci-broken-001.yaml").read_text()
    (labels / "synth-ci-broken-001.yaml").write_text(text.replace("Make the nightly CI on main green again", f"Make the nightly CI green with {token} again"))
    assert main(["recall", "--traces", str(ROOT / "fixtures" / "traces" / "synth-ci-broken-001.json.gz"), "--labels", str(labels),
                 "--prompts", str(ROOT / "prompts" / "terse.j2"), "--redact", "--out", str(tmp_path / "runs"), "--run", "r", "--quiet"]) == 0
    run = tmp_path / "runs" / "r"
    assert main(["report", str(run)]) == 0
    results = read_results(run)
    texts = fact_texts(results)
    assert any("[REDACTED:github_token]" in t for t in texts.values())
    assert all(token not in t for t in texts.values()) and all(token not in f.text for f in _fact_index(results).values())
    for path in run.rglob("*"):
        assert not path.is_file() or token.encode() not in path.read_bytes(), path
    capsys.readouterr()
