"""The key rules of `lint` (corpus/keylint.py), each on a real labels entry as it was shipped
on main before the re-keying (quoted below) against its real trace, with a passing
counter-example: the same fact keyed or written by the rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from compaction_eval.cli.main import main
from compaction_eval.contracts.labels import labels_from_text
from compaction_eval.corpus.keylint import key_warnings, rule_of
from compaction_eval.corpus.load import read_trace

REPO = Path(__file__).resolve().parents[2]
REAL = REPO / "fixtures" / "real"


def trace(tid: str):
    path = next(REAL.glob(f"*/{tid}.json.gz"))
    t, problems = read_trace(path)
    assert t is not None, problems
    return t


def warnings(tid: str, points: list[int], facts: str, avoid: str = "") -> list[tuple[str, str]]:
    """(rule, message) of every key warning of a labels file with these facts (YAML text)."""
    text = (f"schema: compaction-eval/labels@1\ntrace: {tid}\nlabelled_by: human\npoints:\n"
            + "".join(f"  - at: {p}\n" for p in points) + "facts:\n" + facts + (f"avoid:\n{avoid}" if avoid else ""))
    labels = labels_from_text(text, Path(f"labels/real/{tid}.yaml"))
    return [(rule_of(w), str(w)) for w in key_warnings(labels, trace(tid))]


def rules(found: list[tuple[str, str]]) -> set[str]:
    return {r for r, _ in found}


GEMINI_GPG = "session-2026-01-01T01-15-376d5da4"


def test_phrase_key_of_ordinary_words_is_flagged_with_file_fact_and_key():
    # labels/real/session-2026-01-01T01-15-376d5da4.yaml on main: the user said "generate a new
    # gpg keypair for github"; a summary saying "create a GPG key pair for GitHub" misses it
    before = """  - id: intent-gpg-github
    category: intent
    text: Generate a new GPG keypair for GitHub.
    keys: ["gpg keypair for github"]
    source: [11]
"""
    found = warnings(GEMINI_GPG, [28], before)
    assert rules(found) == {"phrase-key"}
    message = found[0][1]
    assert message.startswith(f"labels/real/{GEMINI_GPG}.yaml: line ")
    assert "facts[0].keys[0]" in message and "intent-gpg-github" in message and "'gpg keypair for github'" in message
    assert warnings(GEMINI_GPG, [28], before.replace('"gpg keypair for github"', '"keypair"')) == []


def test_phrase_key_spares_error_text_names_and_a_tool_with_its_verb():
    # error text quoted from tool output is an anchor, even in words (attempt-sudo, same trace)
    facts = """  - id: attempt-ssh
    category: attempt
    text: ssh -T to GitHub was refused.
    keys: ["Permission denied (publickey)", "Permission denied"]
    source: [104, 105]
  - id: decision-auth-key
    category: decision
    text: Add the SSH key on GitHub as an Authentication Key.
    keys: ["Authentication Key"]
    source: [108, 109]
"""
    assert "phrase-key" not in rules(warnings(GEMINI_GPG, [111], facts))


def test_quote_key_shouting_typo_and_worded_number():
    # labels/real/django__django-11265.yaml on main: the task's capitals
    shout = """  - id: constraint-no-test-edits
    category: constraint
    text: Only non-test source files may be changed; tests and configuration files must not be modified.
    keys: ["DO NOT MODIFY"]
    source: [0]
"""
    found = warnings("django__django-11265", [30], shout)
    assert rules(found) == {"quote-key"} and "capitals" in found[0][1]
    assert warnings("django__django-11265", [30], shout.replace('"DO NOT MODIFY"', '"modify"')) == []

    # labels/real/21037e11-...yaml on main: the user's "seperate", which the agent writes "separate"
    typo = """  - id: intent-per-client
    category: intent
    text: Each client (slate admin, zima admin, book, legion, pixel, sonos) must have a separate log file.
    keys: ["seperate log files"]
    source: [178]
"""
    found = warnings("21037e11-89de-484d-abba-8705254aa991", [188], typo)
    assert "quote-key" in rules(found)
    assert any("typo 'seperate'" in m and "'separate'" in m for _, m in found)
    assert warnings("21037e11-89de-484d-abba-8705254aa991", [188], typo.replace('"seperate log files"', '"client"')) == []

    # labels/real/session-2026-01-01T22-31-dfbafc17.yaml on main: the number inside the tool's sentence
    worded = """  - id: log-counts
    category: number
    text: sync_raw_logs.py found 44 conversation logs; 44 were converted to markdown.
    keys: ["Found 44 conversation logs"]
    source: [29, 35, 45]
"""
    found = warnings("session-2026-01-01T22-31-dfbafc17", [46], worded)
    assert rules(found) == {"quote-key"} and "number" in found[0][1]
    assert warnings("session-2026-01-01T22-31-dfbafc17", [46], worded.replace('"Found 44 conversation logs"', '"44 conversation"')) == []


def test_generic_key_common_word_and_word_all_over_the_trace():
    # labels/real/django__django-15554.yaml on main: "test" is in every summary of a bug fix
    common = """  - id: constraint-no-test-edits
    category: constraint
    text: Change only non-test source files in /testbed; tests and configuration files must not be modified.
    keys: ["test"]
    source: [0]
"""
    found = warnings("django__django-15554", [61], common)
    assert rules(found) == {"generic-key"} and "common word" in found[0][1]
    assert warnings("django__django-15554", [61], common.replace('"test"', '"non-test"')) == []

    # labels/real/session-2026-01-11T00-25-17b4d5e9.yaml on main: "blocky" is in 180 of 442 messages
    share = """  - id: intent-blocky
    category: intent
    text: Remove AdGuard Home from the router and install, configure and run Blocky instead.
    keys: ["remove adguard home", "blocky"]
    source: [164]
"""
    found = warnings("session-2026-01-11T00-25-17b4d5e9", [211, 442], share)
    assert rules(found) == {"generic-key"} and "'blocky' is in" in found[0][1]
    assert warnings("session-2026-01-11T00-25-17b4d5e9", [211, 442], share.replace(', "blocky"', "")) == []


def test_generic_key_spares_an_identifier_the_whole_trace_names():
    # is_coroutine is in half the messages of its trace, but it is the function to fix
    facts = """  - id: intent-is-coroutine
    category: intent
    text: Fix is_coroutine in line_profiler.py so it tells coroutine functions from generator functions.
    keys: ["is_coroutine"]
    source: [0]
"""
    assert warnings("pyutils__line_profiler.a646bf0f.100", [39], facts) == []


def test_key_not_in_source():
    # labels/real/django__django-15280.yaml on main: the path is in the command of message 19,
    # not in the outputs the fact cites
    before = """  - id: prefetch-code-location
    category: artifact
    text: Prefetching is driven by prefetch_one_level in django/db/models/query.py.
    keys: ["django/db/models/query.py", "prefetch_one_level"]
    source: [20, 22, 24, 28, 42, 48, 62]
"""
    found = warnings("django__django-15280", [69], before)
    assert rules(found) == {"key-not-in-source"}
    assert "'django/db/models/query.py'" in found[0][1] and "it is in the fact's text" in found[0][1]
    assert warnings("django__django-15280", [69], before.replace("source: [20,", "source: [19, 20,")) == []


def test_text_after_point():
    # labels/real/session-2026-01-01T01-15-376d5da4.yaml on main: first expected at 111, but
    # the text reports the successful ssh -T of message 126
    before = """  - id: attempt-wrong-pubkey
    category: attempt
    text: >-
      ssh -T to GitHub gave "Permission denied (publickey)": the key the agent first showed was
      not the key on disk; once the user replaced the key on GitHub, ssh -T answered "Hi
      mischa-thisness! You've successfully authenticated".
    keys: ["Permission denied (publickey)"]
    source: [104, 105, 107, 118, 119, 122, 123, 124, 126]
"""
    found = warnings(GEMINI_GPG, [111, 129], before)
    assert rules(found) == {"text-after-point"}
    assert "first in message 126" in found[0][1] and "point 111" in found[0][1]
    after = """  - id: attempt-wrong-pubkey
    category: attempt
    text: ssh -T to GitHub gave "Permission denied (publickey)" because the key is not on GitHub yet.
    keys: ["Permission denied (publickey)"]
    source: [104, 105]
"""
    assert warnings(GEMINI_GPG, [111, 129], after) == []


def test_avoid_current():
    # labels/real/session-2026-01-01T01-15-376d5da4.yaml on main: the SSH-signing switch of
    # message 128 is the current config at point 129; it is reverted at 135
    fact = """  - id: master-key
    category: artifact
    text: New master key BF272C9251706E4A3B0CE36712740A31E8F40B96.
    keys: ["BF272C9251706E4A3B0CE36712740A31E8F40B96"]
    source: [147, 149, 150, 151, 153, 154, 155, 156]
"""
    before = """  - id: ssh-signing-config
    reason: superseded
    text: the .gitconfig switch to SSH signing through /opt/1Password/op-ssh-sign, reverted at the user's request
    keys: ["op-ssh-sign"]
    source: [128, 133, 135]
"""
    found = warnings(GEMINI_GPG, [129, 163], fact, before)
    assert rules(found) == {"avoid-current"} and "[129]" in found[0][1]
    assert warnings(GEMINI_GPG, [129, 163], fact, before.replace("[128, 133, 135]", "[135]")) == []


def test_compound_fact():
    # labels/real/session-2026-01-11T00-25-17b4d5e9.yaml on main: a goal plus its whole network
    # layout, keyed so that all three details must survive together
    before = """  - id: intent-optimize
    category: intent
    text: >-
      Optimise the router for performance and efficiency with static IPs: wired WAN from Starlink;
      LAN to a Zimaboard 2 (Intel I225 4x2.5GbE) feeding the MacBook Pro M3 Pro and Legion Pro 7i;
      private Wi-Fi for Pixel 10 Pro XL, MacBook, Legion; an IoT Wi-Fi for 8 ESP32s and a Renogy;
      Mullvad WireGuard with leak protection and selective split tunnelling.
    keys: ["starlink", "Zimaboard", "Mullvad"]
    source: [114]
"""
    found = warnings("session-2026-01-11T00-25-17b4d5e9", [115], before)
    assert rules(found) == {"compound-fact"} and "3 separate clauses" in found[0][1]
    after = before.replace('keys: ["starlink", "Zimaboard", "Mullvad"]', 'keys: ["Zimaboard"]\n    alt_keys: [["Mullvad"], ["starlink"]]')
    assert warnings("session-2026-01-11T00-25-17b4d5e9", [115], after) == []


def test_generated_labels_are_not_key_linted():
    text = (REPO / "labels" / "synth-refactor-001.yaml").read_text(encoding="utf-8")
    labels = labels_from_text(text)
    t, _ = read_trace(REPO / "fixtures" / "traces" / "synth-refactor-001.json.gz")
    assert labels.labelled_by == "generator" and key_warnings(labels, t) == []


@pytest.fixture
def weak_labels(tmp_path: Path) -> Path:
    path = tmp_path / "django__django-11265.yaml"
    path.write_text("""schema: compaction-eval/labels@1
trace: django__django-11265
labelled_by: human
points:
  - at: 30
facts:
  - id: constraint-no-test-edits
    category: constraint
    text: Only non-test source files may be changed; tests and configuration files must not be modified.
    keys: ["DO NOT MODIFY"]
    source: [0]
""", encoding="utf-8")
    return path


def test_lint_warns_and_strict_fails(weak_labels: Path, capsys):
    assert main(["lint", str(weak_labels), "--traces", str(REAL)]) == 0
    out = capsys.readouterr()
    assert f"warning: {weak_labels}: line 10, facts[0].keys[0]: [quote-key] constraint-no-test-edits" in out.out
    assert "1 key warning(s)" in out.err
    assert main(["lint", "--strict", str(weak_labels), "--traces", str(REAL)]) == 1
    assert "--strict: failing" in capsys.readouterr().err


def test_lint_help_names_the_labels_doc(capsys):
    with pytest.raises(SystemExit):
        main(["lint", "--help"])
    out = capsys.readouterr().out
    doc = out.split("lint checks):", 1)[1].split()[0]
    assert Path(doc).name == "labels.md" and Path(doc).is_file()


def test_text_after_point_spares_a_shortened_quote_and_a_labellers_slash():
    # labels/real/session-2025-12-30T18-12-d5169a00.yaml: the kernel line of message 18,
    # quoted with "..." for its middle, is known at point 19 (only the agent's own quote of
    # the whole line comes at 19); "proxy/tunnel" (343e3472-...) is wording, not a path
    facts = """  - id: bug-flip-timeout
    category: bug
    text: >-
      Root symptom after resume: kernel "[drm:nv_drm_atomic_commit [nvidia_drm]] *ERROR* ...
      Flip event timeout on head 0" at 10:11:02.
    keys: ["Flip event timeout"]
    source: [18]
"""
    assert warnings("session-2025-12-30T18-12-d5169a00", [19], facts) == []
    facts = """  - id: zima-hostname
    category: artifact
    text: The zima server is reached as zima.thisness.us, behind a Cloudflare proxy/tunnel.
    keys: ["zima.thisness.us"]
    source: [32]
"""
    assert warnings("343e3472-b9b6-4561-ade0-21d1a4730c11", [33], facts) == []
