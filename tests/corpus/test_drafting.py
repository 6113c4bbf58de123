"""Label drafting (`labels draft`), the draft warning of `lint`, and `corpus` statistics."""

from __future__ import annotations

import json

import pytest

from compaction_eval.cli.main import main
from compaction_eval.contracts.labels import CATEGORIES, lint_against_trace, load_labels
from compaction_eval.corpus.drafting import draft_labels
from compaction_eval.corpus.load import load_corpus, read_trace
from compaction_eval.corpus.stats import corpus_table
from conftest import REAL_MINI, ROOT, real_trace

REAL = ["django__django-11265.json.gz", "sympy__sympy-19040.json.gz", "pytest-dev__pytest-7490.json.gz"]


@pytest.mark.parametrize("name", REAL)
def test_draft_of_a_real_trace_lints_clean_and_has_candidates(tmp_path, name, capsys):
    src = REAL_MINI / name
    trace, _ = read_trace(src)
    at = len(trace.messages) // 2
    out = tmp_path / f"{trace.id}.yaml"
    assert main(["labels", "draft", str(src), "--point", str(at), "--out", str(out)]) == 0
    labels = load_labels(out)
    assert labels.labelled_by == "draft" and tuple(labels.points) == (at,) and labels.trace == trace.id
    assert lint_against_trace(labels, trace) == []
    assert 6 <= len(labels.facts) <= 14
    cats = {f.category for f in labels.facts}
    assert {"intent", "artifact", "constraint"} <= cats and len(cats) >= 4
    assert all(f.source and max(f.source) < at for f in labels.facts)


@pytest.mark.parametrize("name", REAL)
def test_draft_keys_follow_the_key_rule(name):
    """Drafted keys are anchors: no phrase, quote, cue word or word found all over the trace
    (the weak-key rules of corpus.keylint find nothing), and the agent's sentences without an
    anchor are left out rather than keyed by a word."""
    from compaction_eval.contracts.labels import labels_from_text
    from compaction_eval.corpus.drafting import draft_yaml
    from compaction_eval.corpus.keylint import key_warnings, rule_of

    trace, _ = read_trace(REAL_MINI / name)
    at = len(trace.messages) // 2
    labels = labels_from_text(draft_yaml(trace, at).replace("labelled_by: draft", "labelled_by: human"))
    weak = [w for w in key_warnings(labels, trace) if rule_of(w) in ("phrase-key", "quote-key", "generic-key")]
    assert weak == []
    keys = [k.lower() for f in labels.facts for k in f.keys]
    assert not {"must", "never", "only", "do not", "always"} & set(keys)


def test_draft_finds_planted_facts_of_a_synthetic_trace():
    """On a generator trace, the rules recover literal facts the generator planted."""
    trace, _ = read_trace(ROOT / "fixtures" / "traces" / "synth-ci-broken-001.json.gz")
    gold = load_labels(ROOT / "labels" / "synth-ci-broken-001.yaml")
    at = gold.points[0]
    keys = {k.lower() for f in draft_labels(trace, at)["facts"] for k in f["keys"]}
    planted = [f for f in gold.expected(at) if f.category == "artifact"]
    assert any(any(k.lower() in keys for k in f.keys) for f in planted)
    assert any("error" in k for k in keys)


def test_draft_rejects_a_point_outside_the_trace(capsys):
    assert main(["labels", "draft", str(REAL_MINI / REAL[0]), "--point", "9999"]) == 2
    assert "outside the trace" in capsys.readouterr().err


def test_lint_warns_on_drafts_but_passes(tmp_path, capsys):
    src = REAL_MINI / REAL[0]
    assert main(["labels", "draft", str(src), "--point", "30", "--out", str(tmp_path / "d.yaml")]) == 0
    capsys.readouterr()
    assert main(["lint", str(tmp_path), "--traces", str(REAL_MINI)]) == 0
    err = capsys.readouterr().err
    assert "warning:" in err and "labelled_by: draft" in err and "ok" in err
    assert main(["lint", str(ROOT / "labels" / "real"), "--traces", str(ROOT / "fixtures" / "real")]) == 0
    assert "warning" not in capsys.readouterr().err


def test_corpus_table_splits_synthetic_and_real(capsys):
    real = sorted((ROOT / "labels" / "real").glob("*.yaml"))
    # Only the labelled real traces: reading every shipped one would make this test slow for nothing.
    corpus = load_corpus([ROOT / "fixtures" / "traces", *(real_trace(p.stem) for p in real)],
                         [ROOT / "labels", *real])
    table = corpus_table(corpus)
    syn, hum, both = (table["groups"][k] for k in ("synthetic", "real", "all"))
    assert syn["traces"] == 11 and hum["traces"] == len(real) >= 15
    assert both["facts"] == syn["facts"] + hum["facts"] and set(both["facts_by_category"]) == set(CATEGORIES)
    assert all(syn["facts_by_category"][c] > 0 for c in CATEGORIES)
    assert main(["corpus", "--traces", str(real_trace(real[0].stem)), "--labels", str(real[0]),
                 "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["groups"]["real"]["traces"] == 1
    assert main(["corpus"]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0].split()[:3] == ["corpus", "traces", "tokens"] and "synthetic" in text
