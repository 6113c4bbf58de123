"""Your own prompt (issue 23 items 1, 4, 5): find, show and copy the packaged prompts, scaffold a
project, lint a prompt, and a run that refuses a prompt that never renders the conversation.
Real files throughout: the packaged prompts, a shipped synthetic trace and its labels."""

from __future__ import annotations

import re
import tomllib

import pytest
import yaml

from compaction_eval.cli.main import build_parser, main
from compaction_eval.cli.prompts import DOCS, SCAFFOLD
from compaction_eval.contracts.prompts import CATEGORY_FIELDS, HEADER_KEYS, load_candidate
from conftest import ROOT

TRACE = ROOT / "fixtures" / "traces" / "synth-ci-broken-001.json.gz"
LABELS = ROOT / "labels" / "synth-ci-broken-001.yaml"
PACKAGED = {"handoff", "inspect_default", "recall_max", "terse"}


@pytest.fixture
def empty_dir(tmp_path, monkeypatch):
    """An empty working directory (not a project: default names mean the packaged data)."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_prompts_list_and_show_the_packaged_prompts(empty_dir, capsys):
    code, out, _ = run(capsys, "prompts", "list", "--format", "json")
    import json

    rows = json.loads(out)["prompts"]
    assert code == 0 and {r["name"] for r in rows} == PACKAGED and all(r["packaged"] for r in rows)
    code, out, _ = run(capsys, "prompts", "show", "handoff")
    assert code == 0 and out == (ROOT / "prompts" / "handoff.j2").read_text()
    code, _, err = run(capsys, "prompts", "show", "nope")
    assert code == 2 and "no packaged prompt of that name (packaged: handoff, inspect_default, recall_max, terse" in err


def test_a_copied_packaged_prompt_works_without_its_partial(empty_dir, capsys):
    code, out, _ = run(capsys, "prompts", "copy", "handoff", "myprompts", "--name", "mine")
    copy = empty_dir / "myprompts" / "mine.j2"
    assert code == 0 and out.strip() == str(copy.relative_to(empty_dir))
    assert sorted(p.name for p in copy.parent.iterdir()) == ["mine.j2"]  # no _span.j2 beside it
    candidate = load_candidate(copy)
    assert candidate.name == "mine" and "<conversation>\nsee src/x.py\n</conversation>" in candidate.render(budget=100, span="see src/x.py")
    # and the recall suite runs it
    code, _, err = run(capsys, "recall", "--traces", str(TRACE), "--labels", str(LABELS), "--prompts", str(copy),
                       "--out", "results", "--run", "r", "--quiet")
    assert code == 0, err
    # a second copy over it is refused, --force replaces it
    code, _, err = run(capsys, "prompts", "copy", "handoff", "myprompts", "--name", "mine")
    assert code == 2 and "mine.j2" in err and "--force" in err
    assert run(capsys, "prompts", "copy", "handoff", "myprompts", "--name", "mine", "--force")[0] == 0


def test_a_local_partial_wins_over_the_packaged_one(tmp_path):
    (tmp_path / "_span.j2").write_text("[[{{ span }}]]\n")
    (tmp_path / "p.j2").write_text('{#-\nname: p\n-#}\n{% include "_span.j2" %}Summarise in {{ budget }}.\n')
    assert load_candidate(tmp_path / "p.j2").render(budget=5, span="S").startswith("[[S]]")


def test_recall_refuses_a_prompt_that_never_renders_the_conversation(empty_dir, capsys):
    bad = empty_dir / "myagent.j2"
    bad.write_text("{#- name: myagent -#}\nSummarise the conversation in at most {{ budget }} tokens.\n")
    code, out, err = run(capsys, "recall", "--traces", str(TRACE), "--labels", str(LABELS), "--prompts", str(bad),
                         "--out", "results", "--run", "r", "--quiet")
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and out == ""
    assert lines[0].startswith(f"compaction-eval: error: {bad}: prompt 'myagent' never renders the conversation in the inline shape")
    assert '{% include "_span.j2" %}' in lines[0]
    assert not (empty_dir / "results" / "r").exists()
    # `run` too, before anything runs
    code, out, err = run(capsys, "run", "--traces", str(TRACE), "--labels", str(LABELS), "--prompts", str(bad),
                         "--out", "results", "--run", "r2", "--quiet")
    assert code == 2 and "never renders the conversation" in err and not (empty_dir / "results" / "r2").exists()


def test_lint_a_good_prompt(empty_dir, capsys):
    run(capsys, "prompts", "copy", "handoff", ".", "--name", "mine")
    code, out, err = run(capsys, "lint", "mine.j2")
    assert code == 0 and out == ""
    assert re.search(r"note: mine\.j2: trial render on the real trace \S+ \(messages\[0:\d+\], --shape inline\)", err)
    assert err.strip().endswith("lint: 1 prompt(s): ok")


@pytest.mark.parametrize("text, expected", [
    ("{#- name: myagent -#}\nSummarise in {{ budget }} tokens.\n", "never renders the conversation in the inline shape"),
    ("Summarise {{ span }}.\n", "line 1: missing metadata header"),
    ('{#-\nname: m\nfeilds: [intent]\n-#}\n{% include "_span.j2" %}\n', "header.feilds: unknown header key (allowed: name, description, fields)"),
    ('{#-\nname: m\nfields: [Next Step]\n-#}\n{% include "_span.j2" %}\n', "header.fields[0]: 'Next Step': a field name is lower-case"),
    ('{#-\nname: my prompt\n-#}\n{% include "_span.j2" %}\n', "header.name: 'my prompt': a name is letters"),
    ('{#-\nname: m\n-#}\n{% include "_spn.j2" %}\n', "included template not found"),
    ('{#-\nname: m\n-#}\n{% include "_span.j2" %}{{ spam }}\n', "'spam' is undefined"),
])
def test_lint_reports_what_is_wrong_with_a_prompt(empty_dir, capsys, text, expected):
    (empty_dir / "mine.j2").write_text(text)
    code, out, err = run(capsys, "lint", "mine.j2")
    assert code == 1 and out.startswith("mine.j2: ") and expected in out, out
    assert "lint: 1 prompt(s): 1 problem(s)" in err


def test_lint_checks_the_chosen_shape_and_warns_about_idle_fields(empty_dir, capsys):
    (empty_dir / "mine.j2").write_text('{#-\nname: m\ndescription: d\nfields: [bugs, state]\n-#}\n<c>{{ span }}</c>\n'
                                       '{% if "bugs" in fields %}Keep errors.{% endif %}\n')
    code, out, err = run(capsys, "lint", "mine.j2")
    assert code == 0 and "'state' changes nothing in the prompt" in err and "'bugs'" not in err
    code, out, err = run(capsys, "lint", "--shape", "messages", "mine.j2")
    assert code == 1 and "renders `None` in the messages shape" in out


def test_init_scaffolds_a_project_and_never_overwrites(empty_dir, capsys):
    code, out, _ = run(capsys, "init", "proj")
    files = {"prompts/mine.j2", "labels/README.md", "fixtures/traces/README.md", ".github/workflows/compaction-eval.yml"}
    assert code == 0 and {p.strip().removeprefix("proj/") for p in out.splitlines()} == files
    assert load_candidate(empty_dir / "proj" / "prompts" / "mine.j2").name == "mine"
    workflow = yaml.safe_load((empty_dir / "proj" / ".github" / "workflows" / "compaction-eval.yml").read_text())
    commands = " ".join(s.get("run", "") for s in workflow["jobs"]["recall"]["steps"])
    # every command the workflow runs is one the CLI has
    parser_commands = set(build_parser()._subparsers._group_actions[0].choices)
    assert set(re.findall(r"(?<!install )compaction-eval (\w+)", commands)) <= parser_commands
    before = (empty_dir / "proj" / "prompts" / "mine.j2").read_text()
    (empty_dir / "proj" / "prompts" / "mine.j2").write_text(before + "edited\n")
    code, _, err = run(capsys, "init", "proj")
    assert code == 2 and "exists: init never overwrites" in err
    assert (empty_dir / "proj" / "prompts" / "mine.j2").read_text() == before + "edited\n"


def test_the_prompt_docs_ship_and_their_worked_example_lints(empty_dir, capsys):
    doc = (DOCS / "prompts.md").read_text()
    for word in (*HEADER_KEYS, *CATEGORY_FIELDS.values(), "span", "budget", "focus", "fields"):
        assert f"`{word}`" in doc, word
    assert "**inline**" in doc and "**messages**" in doc and '{% include "_span.j2" %}' in doc
    example = doc.split("## A worked example", 1)[1].split("`prompts/mine.j2`", 1)[1].split("Check and measure it", 1)[0]
    template = "\n".join(line[4:] for line in example.splitlines() if line.startswith("    ")) + "\n"
    (empty_dir / "mine.j2").write_text(template)
    code, _, err = run(capsys, "lint", "mine.j2")
    assert code == 0 and "warning" not in err, err
    # shipped in the wheel and named by --help
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["compaction_eval"]
    assert {"docs/*.md", "scaffold/*"} <= set(data) and SCAFFOLD.is_dir()
    assert "compaction-eval docs prompts" in build_parser().format_help()
    code, out, _ = run(capsys, "docs", "prompts")
    assert code == 0 and out == doc


def test_the_readme_points_to_shipped_docs_not_a_design_file():
    readme = (ROOT / "README.md").read_text()
    assert "DESIGN.md" not in readme  # neither a clone nor the wheel holds it
    for command in ("compaction-eval docs prompts", "compaction-eval docs labels", "compaction-eval schema trace|labels|results"):
        assert command in readme
