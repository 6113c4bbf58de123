"""The corpus as a Hugging Face dataset: export, both datasets loaders, and `hf:` inputs read
back through corpus.load (offline: conftest sets HF_HUB_OFFLINE / HF_DATASETS_OFFLINE)."""

from __future__ import annotations

import json

import pytest

from compaction_eval.cli.corpus import register
from compaction_eval.contracts.problems import ContractError
from compaction_eval.corpus.load import load_corpus
from compaction_eval.corpus.stats import corpus_table
from conftest import REAL, ROOT


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    corpus = load_corpus([REAL, ROOT / "fixtures" / "traces"], [ROOT / "labels" / "real", ROOT / "labels"])
    from compaction_eval.corpus.export import export_hf

    out = export_hf(corpus, tmp_path_factory.mktemp("hf") / "corpus")
    return corpus, out


def test_export_then_import_gives_back_identical_traces_and_labels(exported):
    corpus, out = exported
    back = load_corpus([f"hf:{out}"], [f"hf:{out}"])
    assert sorted(back.traces) == sorted(corpus.traces) and sorted(back.labels) == sorted(corpus.labels)
    for tid, trace in corpus.traces.items():
        assert back.traces[tid].to_json() == trace.to_json()
    for tid, lab in corpus.labels.items():
        assert back.labels[tid].text == lab.path.read_text(encoding="utf-8")
        assert (back.labels[tid].points, back.labels[tid].facts, back.labels[tid].avoid) == (lab.points, lab.facts, lab.avoid)
    assert corpus_table(back)["groups"] == corpus_table(corpus)["groups"]


def test_both_datasets_loaders_read_the_folder(exported):
    import datasets

    corpus, out = exported
    for ds in (datasets.load_from_disk(str(out))["train"], datasets.load_dataset(str(out), split="train")):
        assert ds.num_rows == len(corpus.traces)
        row = ds.filter(lambda r: r["id"] == "django__django-11087")[0]
        assert row["source"] == "mini-swe-agent" and row["labelled_by"] == "human" and row["license"] == "MIT"
        assert json.loads(row["trace"])["id"] == "django__django-11087"
    card = (out / "README.md").read_text()
    assert "configs:" in card and "## Label rule" in card and "| mini-swe-agent |" in card and "| synthetic |" in card


def test_hf_errors_are_located(tmp_path, exported):
    with pytest.raises(ContractError, match="hf:.*cannot load the dataset"):
        load_corpus([f"hf:{tmp_path / 'missing'}"], [ROOT / "labels"])
    # a folder that is not an export is never overwritten
    (tmp_path / "mine").mkdir()
    from compaction_eval.corpus.export import export_hf

    with pytest.raises(ContractError, match="not a dataset export"):
        export_hf(exported[0], tmp_path / "mine")


def test_corpus_export_command_and_json_by_source(tmp_path, capsys):
    import argparse

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["corpus", "export", str(tmp_path / "out"), "--traces", str(REAL), "--labels", str(ROOT / "labels" / "real")])
    assert args.func(args) == 0
    assert (tmp_path / "out" / "dataset_dict.json").exists() and not list(tmp_path.glob(".*export-tmp"))
    args = parser.parse_args(["corpus", "--format", "json", "--traces", f"hf:{tmp_path / 'out'}", "--labels", f"hf:{tmp_path / 'out'}"])
    assert args.func(args) == 0
    table = json.loads(capsys.readouterr().out)
    rows = {r["source"]: r for r in table["by_source"]}
    assert {"mini-swe-agent", "claude-code", "gemini-cli", "openhands", "swe-agent", "aider"} <= set(rows)
    mini = rows["mini-swe-agent"]
    assert mini["traces"] >= 15 and mini["models"] == ["gemini-3-pro-preview"] and mini["task_kinds"] == ["swe-bench"]
    assert sum(mini["facts_by_category"].values()) == mini["facts"] > 0


def test_per_source_selector_keeps_n_labelled_traces_per_source():
    corpus = load_corpus([REAL, ROOT / "fixtures" / "traces"], [ROOT / "labels", str(ROOT / "labels" / "real") + "#2"])
    rows = {r["source"]: r for r in corpus_table(corpus)["by_source"]}
    assert rows["mini-swe-agent"]["traces"] == 2 and rows["synthetic"]["traces"] == 11
    assert all(r["traces"] <= 2 for name, r in rows.items() if name != "synthetic")
