"""Importers on the real traces in ../shared/data, import_files, and the hand labels of labels/real."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from compaction_eval.contracts.labels import CATEGORIES, lint_against_trace, load_labels
from compaction_eval.contracts.problems import ContractError
from compaction_eval.contracts.traces import (
    load_trace,
    message_text,
    read_json_file,
    validate_trace,
)
from compaction_eval.corpus.importers import (
    FORMATS,
    convert,
    convert_all,
    detect_format,
)
from compaction_eval.corpus.importing import import_files
from conftest import MINI_SWE, REAL_MINI, ROOT, SHARED_DATA, needs_shared

OPENHANDS = SHARED_DATA / "openhands" / "swe-gym-openhands" / "sample_raw.json"
MINI_FILES = sorted(MINI_SWE.glob("*.traj.json"))
# the mini-swe-agent labels (the rules below are theirs; other sources are checked in test_importers_real)
REAL_LABELS = sorted(p for p in (ROOT / "labels" / "real").glob("*.yaml") if (REAL_MINI / f"{p.stem}.json.gz").exists())


@pytest.fixture(scope="module")
def mini_converted() -> dict[str, tuple[dict, dict]]:
    """file name -> (source JSON, converted trace), converted once for the module."""
    return {p.name: (json.loads(p.read_text()), convert(p)) for p in MINI_FILES}


@pytest.fixture(scope="module")
def openhands() -> tuple[list[dict], list[dict]]:
    return json.loads(OPENHANDS.read_text()), convert_all(OPENHANDS)


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data))
    return path


# ------------------------------------------------------------------ mini-swe-agent


@needs_shared
def test_all_mini_swe_agent_trajectories_convert_one_message_per_source_message(mini_converted):
    assert len(mini_converted) == 30
    for name, (src, trace) in mini_converted.items():
        assert validate_trace(trace, name) == []
        assert trace["id"] == src["instance_id"]
        assert detect_format(src) == "mini-swe-agent"
        assert trace["source"] == {"kind": "mini-swe-agent", "path": name, "license": "MIT"}
        assert trace["metadata"]["index_offset"] == 1
        assert trace["metadata"]["instance_id"] == src["instance_id"]
        assert trace["metadata"]["exit_status"] == src["info"]["exit_status"]
        assert trace["system"] == src["messages"][0]["content"]
        assert len(trace["messages"]) == len(src["messages"]) - 1
        for i, msg in enumerate(trace["messages"]):
            original = src["messages"][i + trace["metadata"]["index_offset"]]
            assert msg == {"role": original["role"], "content": original["content"]}


@needs_shared
def test_mini_swe_agent_spot_checks(mini_converted):
    _, django = mini_converted["django__django-11087.traj.json"]
    msgs = django["messages"]
    assert msgs[0]["role"] == "user" and "Optimize .delete() to use only required fields" in msgs[0]["content"]
    assert msgs[1]["role"] == "assistant" and "```bash\nls -R\n```" in msgs[1]["content"]
    assert msgs[57]["role"] == "assistant" and "python3 tests/runtests.py delete" in msgs[57]["content"]
    assert "test_relational_post_delete_signals_happen_before_parent_object" in msgs[58]["content"]
    _, sympy = mini_converted["sympy__sympy-15976.traj.json"]
    assert "sed -i 's/mmsubsup/msubsup/g' sympy/printing/mathml.py" in sympy["messages"][53]["content"]
    assert "return msubsup" in sympy["messages"][56]["content"]


def test_mini_swe_agent_keeps_same_role_neighbours_apart(tmp_path):
    src = {
        "trajectory_format": "mini-swe-agent-1",
        "instance_id": "demo__demo-1",
        "info": {"exit_status": "LimitsExceeded"},
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "task"},
            {"role": "user", "content": "format error feedback"},
            {"role": "assistant", "content": "THOUGHT: a\n```bash\nls\n```"},
        ],
    }
    trace = convert(write_json(tmp_path / "demo.traj.json", src))
    assert [m["content"] for m in trace["messages"]] == ["task", "format error feedback", "THOUGHT: a\n```bash\nls\n```"]
    assert trace["metadata"]["exit_status"] == "LimitsExceeded"


def test_mini_swe_agent_bad_role_names_file_and_message(tmp_path):
    src = {"trajectory_format": "mini-swe-agent-1", "instance_id": "x", "info": {},
           "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "t"}, {"role": "tool", "content": "?"}]}
    path = write_json(tmp_path / "bad.traj.json", src)
    with pytest.raises(ContractError) as err:
        convert(path)
    assert str(path) in str(err.value) and "messages[2].role" in str(err.value)


# ------------------------------------------------------------------ openai-chat (OpenHands)


@needs_shared
def test_openhands_samples_convert_and_pair_every_tool_call(openhands):
    samples, traces = openhands
    assert detect_format(samples) == "openai-chat"
    assert [t["id"] for t in traces] == [s["instance_id"] for s in samples]
    # 41, 23, 26, 37, 61 source messages minus the system prompt minus merged tool runs
    assert [len(t["messages"]) for t in traces] == [34, 22, 24, 36, 60]
    for k, (sample, trace) in enumerate(zip(samples, traces, strict=False)):
        assert validate_trace(trace, f"sample {k}") == []
        src = sample["messages"]
        assert trace["system"] == src[0]["content"]
        assert trace["source"] == {"kind": "openai-chat", "path": OPENHANDS.name, "sample": k}
        index_map = trace["metadata"]["index_map"]
        assert len(index_map) == len(trace["messages"])
        assert [i for group in index_map for i in group] == list(range(1, len(src)))
        for t_index, group in enumerate(index_map):
            msg = trace["messages"][t_index]
            if len(group) > 1 or src[group[0]]["role"] == "tool":
                # a run of tool messages -> one user message of results, in source order
                assert all(src[i]["role"] == "tool" for i in group)
                assert msg["role"] == "user"
                assert [b["tool_use_id"] for b in msg["content"]] == [src[i]["tool_call_id"] for i in group]
                assert [b["content"] for b in msg["content"]] == [src[i]["content"] for i in group]
            elif src[group[0]]["tool_calls"] and t_index < len(index_map) - 1:
                calls = src[group[0]]["tool_calls"]
                uses = [b for b in msg["content"] if b["type"] == "tool_use"]
                assert [(u["id"], u["name"], u["input"]) for u in uses] == [
                    (c["id"], c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls
                ]
        # every run ends on a call that never ran: kept as text and recorded
        last = trace["messages"][-1]
        [unanswered] = trace["metadata"]["unanswered_tool_calls"]
        assert unanswered["index"] == len(trace["messages"]) - 1
        assert unanswered["source_index"] == len(src) - 1
        assert unanswered["id"] == src[-1]["tool_calls"][0]["id"]
        assert f"[tool call {unanswered['name']}]" in message_text(last)
        assert trace["metadata"]["sample_info"]["resolved"] is True


@needs_shared
def test_openhands_spot_checks(openhands):
    samples, traces = openhands
    mypy = traces[0]
    # source messages 24-28: one assistant turn with four tool calls and its four results
    [merged] = [t for t, group in enumerate(mypy["metadata"]["index_map"]) if len(group) == 4]
    assert [b["type"] for b in mypy["messages"][merged]["content"]] == ["tool_result"] * 4
    assert mypy["messages"][1]["content"][0] == {
        "type": "tool_use",
        "id": "call_wmUMCvkWsBrXZdFlTSwE3sy6",
        "name": "str_replace_editor",
        "input": {"command": "view", "path": "/workspace/python__mypy__1.6", "view_range": [0, -1]},
    }
    assert mypy["messages"][2]["content"][0]["content"].startswith("OBSERVATION:\nERROR:")
    tools = {t["name"]: t for t in mypy["tools"]}
    assert sorted(tools) == ["execute_bash", "finish", "str_replace_editor"]
    # the dump pads every schema with the union of all parameters as nulls: dropped
    assert list(tools["execute_bash"]["input_schema"]["properties"]) == ["command"]
    assert "view" in tools["str_replace_editor"]["input_schema"]["properties"]["command"]["enum"]
    assert tools["finish"]["input_schema"] == {"type": "object", "properties": {}}


def _chat(*messages):
    return [{"instance_id": "demo", "messages": list(messages)}]


SYSTEM = {"role": "system", "content": "be brief"}
USER = {"role": "user", "content": "list files"}


def _call(call_id, args='{"command": "ls"}', name="execute_bash"):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


def test_openai_unpaired_tool_call_names_file_and_message(tmp_path):
    path = write_json(tmp_path / "chat.json", _chat(
        SYSTEM, USER,
        {"role": "assistant", "content": "", "tool_calls": [_call("call_1")]},
        {"role": "user", "content": "why no result?"},
        {"role": "assistant", "content": "done"},
    ))
    with pytest.raises(ContractError) as err:
        convert(path)
    text = str(err.value)
    assert str(path) in text and "[0].messages[2]" in text and "'call_1'" in text


def test_openai_unpaired_tool_result_and_partial_answer(tmp_path):
    orphan = write_json(tmp_path / "orphan.json", [
        USER, {"role": "tool", "tool_call_id": "call_9", "content": "?"}, {"role": "assistant", "content": "ok"},
    ])
    with pytest.raises(ContractError, match=r"orphan\.json: \[1\]: tool result for 'call_9'"):
        convert(orphan)
    partial = write_json(tmp_path / "partial.json", _chat(
        USER,
        {"role": "assistant", "content": None, "tool_calls": [_call("a"), _call("b")]},
        {"role": "tool", "tool_call_id": "a", "content": "x"},
        {"role": "assistant", "content": "ok"},
    ))
    with pytest.raises(ContractError, match=r"partial\.json: \[0\]\.messages\[1\]: tool call 'b'"):
        convert(partial)


def test_openai_arguments_and_text_kept(tmp_path):
    path = write_json(tmp_path / "args.json", {"messages": [
        SYSTEM, USER,
        {"role": "assistant", "content": "looking", "tool_calls": [_call("c1", "{not json"), _call("c2", '"a string"')]},
        {"role": "tool", "tool_call_id": "c2", "content": "r2"},
        {"role": "tool", "tool_call_id": "c1", "content": "r1"},
        {"role": "assistant", "content": "bye"},
    ]})
    trace = convert(path)
    assert trace["id"] == "args"  # no instance id: the file stem
    blocks = trace["messages"][1]["content"]
    assert blocks[0] == {"type": "text", "text": "looking"}
    assert blocks[1]["input"] == {"_raw": "{not json"} and blocks[2]["input"] == {"_raw": '"a string"'}
    assert trace["messages"][2] == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "c2", "content": "r2"},
        {"type": "tool_result", "tool_use_id": "c1", "content": "r1"},
    ]}
    assert trace["metadata"]["index_map"] == [[1], [2], [3, 4], [5]]


# ------------------------------------------------------------------ anthropic


def test_anthropic_passes_messages_through(tmp_path):
    messages = [
        {"role": "user", "content": "find the bug"},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"},
                                          {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "ls"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py"}]},
    ]
    request = {"model": "claude", "system": [{"type": "text", "text": "part one"}, {"type": "text", "text": "part two"}],
               "messages": messages, "tools": [{"name": "bash", "input_schema": {"type": "object"}}]}
    path = write_json(tmp_path / "session-7.json", request)
    assert detect_format(request) == "anthropic"
    trace = convert(path)
    assert trace["id"] == "session-7" and trace["messages"] == messages
    assert trace["system"] == "part one\n\npart two" and trace["tools"] == request["tools"]
    bare = convert(write_json(tmp_path / "bare.json", messages), fmt="anthropic")
    assert bare["id"] == "bare" and bare["messages"] == messages and bare["system"] == ""


def test_anthropic_contract_break_is_reported_with_place(tmp_path):
    path = write_json(tmp_path / "img.json", [{"role": "user", "content": [{"type": "image", "source": {}}]}])
    with pytest.raises(ContractError, match=r"img\.json: messages\[0\]\.content\[0\]\.type"):
        convert(path)


# ------------------------------------------------------------------ formats


@needs_shared
def test_detect_format_tells_real_files_apart():
    assert detect_format(read_json_file(MINI_FILES[0])) == "mini-swe-agent"
    assert detect_format(read_json_file(OPENHANDS)) == "openai-chat"
    assert detect_format({"messages": [{"role": "user", "content": "hi"}]}) == "anthropic"
    assert detect_format({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]}) == "openai-chat"
    assert detect_format({"events": []}) is None
    assert set(FORMATS) == {"mini-swe-agent", "openai-chat", "anthropic"}


@needs_shared
def test_unknown_format_names_the_file(tmp_path):
    path = write_json(tmp_path / "events.json", {"events": []})
    with pytest.raises(ContractError, match=r"events\.json: cannot tell the trace format"):
        convert(path)
    with pytest.raises(ContractError, match=r"events\.json: unknown trace format 'langchain'"):
        convert(path, fmt="langchain")
    assert convert(MINI_FILES[0], fmt="mini-swe-agent-1")["id"] == MINI_FILES[0].name.removesuffix(".traj.json")


@needs_shared
def test_convert_needs_a_sample_for_multi_trace_files():
    with pytest.raises(ContractError, match="holds 5 traces"):
        convert(OPENHANDS)
    assert convert(OPENHANDS, sample=3)["id"] == "getmoto__moto-6387_0"


# ------------------------------------------------------------------ import_files


@needs_shared
def test_import_files_writes_loadable_traces(tmp_path):
    out = tmp_path / "out"
    written = import_files([MINI_FILES[0], OPENHANDS], None, out)
    assert [p.name for p in written] == [
        MINI_FILES[0].name.removesuffix(".traj.json") + ".json",
        *[s["instance_id"] + ".json" for s in json.loads(OPENHANDS.read_text())],
    ]
    assert sorted(out.iterdir()) == sorted(written)  # no temporary files left behind
    loaded = load_trace(written[0])
    assert loaded.to_json() == convert(MINI_FILES[0])


@needs_shared
def test_import_files_writes_nothing_when_one_source_is_bad(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.json").write_text("old")
    bad = write_json(tmp_path / "bad.json", _chat(USER, {"role": "assistant", "content": "", "tool_calls": [_call("x")]},
                                                  {"role": "assistant", "content": "no result"}))
    with pytest.raises(ContractError, match=r"bad\.json: \[0\]\.messages\[1\]"):
        import_files([MINI_FILES[0], bad, MINI_FILES[1]], None, out)
    assert [p.name for p in out.iterdir()] == ["keep.json"]
    fresh = tmp_path / "fresh"
    with pytest.raises(ContractError):
        import_files([MINI_FILES[0], bad], None, fresh)
    assert not fresh.exists()


@needs_shared
def test_import_files_refuses_duplicate_ids(tmp_path):
    with pytest.raises(ContractError, match="also produced by"):
        import_files([MINI_FILES[0], MINI_FILES[0]], "mini-swe-agent", tmp_path / "out")
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ labels/real


def test_real_labels_exist_for_varied_repositories():
    repos = {p.name.split("__")[0] for p in REAL_LABELS}
    assert len(REAL_LABELS) >= 15 and {"django", "sympy", "sphinx-doc"} <= repos
    assert repos & {"pytest-dev", "pylint-dev"}


@pytest.mark.parametrize("path", REAL_LABELS, ids=lambda p: p.stem)
def test_real_labels_load_and_lint_clean(path):
    labels = load_labels(path)
    trace = load_trace(REAL_MINI / f"{labels.trace}.json.gz")
    assert lint_against_trace(labels, trace) == []
    assert labels.trace == path.stem == trace.id
    assert labels.labelled_by == "human"
    # the labelling rules of the briefs, so that an edit cannot quietly drift from them (the
    # round-5 brief allowed up to 4 points and 24 facts, to label the end of a run as well)
    assert 1 <= len(labels.points) <= 4
    for at in labels.points:
        assert trace.messages[at]["role"] == "assistant"  # compaction happens before an assistant turn
        assert 0.15 <= at / len(trace.messages) < 1
    assert 8 <= len(labels.facts) <= 24
    categories = Counter(f.category for f in labels.facts)
    assert len(categories) >= 5 and set(categories) <= set(CATEGORIES)
    assert 2 <= sum(f.critical for f in labels.facts) <= 6
    for at in labels.points:
        assert len(labels.expected(at)) >= 6  # every point has enough to measure


def test_lint_catches_a_key_missing_from_the_history(tmp_path):
    """The clean lint above means something: a key absent before the point is reported."""
    original = ROOT / "labels" / "real" / "sympy__sympy-15976.yaml"
    broken = tmp_path / original.name
    broken.write_text(original.read_text().replace('"s/mmsubsup/msubsup/g"', '"s/msubsup/mmsubsup/g"'))
    trace = load_trace(REAL_MINI / "sympy__sympy-15976.json.gz")
    problems = lint_against_trace(load_labels(broken), trace)
    assert [p.place for p in problems] == [problems[0].place] and "keys[0]" in problems[0].place


# ------------------------------------------------------------------ Claude Code transcripts

IMPORTER_DATA = ROOT / "tests" / "data" / "importers"
CLAUDE_SAMPLE = IMPORTER_DATA / "claude-code-session.jsonl"
INSPECT_SAMPLE = IMPORTER_DATA / "inspect-tool-run.eval"


def test_claude_code_main_thread_merged_and_paired():
    [trace] = convert_all(CLAUDE_SAMPLE)
    assert validate_trace(trace, "t") == []
    assert trace["id"] == "7f3c2a10-5b1e-4c2d-9a8e-0d4b6c1e2f33" and trace["source"]["kind"] == "claude-code"
    shapes = [(m["role"], [b["type"] for b in m["content"]]) for m in trace["messages"]]
    assert shapes == [
        ("user", ["text"]),
        ("assistant", ["thinking", "text", "tool_use"]),  # three events of msg_01A, one message
        ("user", ["tool_result"]),
        ("assistant", ["text", "tool_use", "tool_use"]),  # parallel calls of msg_01B
        ("user", ["tool_result", "tool_result"]),          # two result events, one turn
        ("assistant", ["tool_use"]),
        ("user", ["tool_result"]),
        ("assistant", ["text"]),
    ]
    text = "\n".join(message_text(m) for m in trace["messages"])
    assert "rewrite the whole billing module" not in text  # the abandoned branch
    assert "Found it in proration.py" not in text          # the sub-agent's sidechain
    assert "Decimal('1324.50')" in text and "end exclusive (since #877)" in text
    assert trace["messages"][2]["content"][0]["is_error"] is True
    meta = trace["metadata"]
    assert meta["sidechain_events_skipped"] == 2 and meta["other_branch_events_skipped"] == 1
    assert meta["summaries"] == ["Fix proration off-by-one in billing"] and meta["cwd"] == "/home/dev/ledgerline"


def test_claude_code_unanswered_tool_use_gets_an_error_result(tmp_path):
    lines = CLAUDE_SAMPLE.read_text().splitlines()
    # Cut the transcript right after the Edit call: its result never arrived.
    cut = [ln for ln in lines if json.loads(ln).get("uuid") not in ("u-12", "u-13")]
    path = tmp_path / "cut.jsonl"
    path.write_text("\n".join(cut) + "\n")
    [trace] = convert_all(path)
    last = trace["messages"][-1]
    assert last["role"] == "user" and last["content"][0]["is_error"] and trace["metadata"]["unanswered_tool_uses"] == 1


@pytest.mark.parametrize("content,place", [
    ('{"type": "user", "uuid": "a", "parentUuid": null, "message": {"role": "user", "content": "hi"}}\n{"type": "assi',
     "line 2, column"),
    ('{"type": "user", "uuid": "a", "parentUuid": "zzz", "message": {"role": "user", "content": "hi"}}\n', "line 1"),
    ('[1, 2]\n', "line 1"),
    ('\n\n', ""),
])
def test_claude_code_corrupt_input_is_located_and_writes_nothing(tmp_path, content, place):
    path = tmp_path / "session.jsonl"
    path.write_text(content)
    out = tmp_path / "out"
    with pytest.raises(ContractError) as exc:
        import_files([path], None, out)
    assert str(exc.value).startswith(f"{path}: {place}") and "\n" not in str(exc.value)
    assert not out.exists()


def test_claude_code_named_format_on_other_jsonl_is_refused(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text('{"level": "info", "msg": "started"}\n')
    with pytest.raises(ContractError, match="not a Claude Code transcript"):
        convert_all(path, "claude-code")


# ------------------------------------------------------------------ inspect eval logs


def test_inspect_log_samples_become_traces():
    traces = convert_all(INSPECT_SAMPLE)
    assert sorted(t["id"] for t in traces) == ["config_lookup-region", "config_lookup-retry"]
    retry = next(t for t in traces if t["id"] == "config_lookup-retry")
    assert validate_trace(retry, "t") == []
    assert retry["system"].startswith("You answer from the config")
    shapes = [(m["role"], [b["type"] for b in m["content"]]) for m in retry["messages"]]
    assert shapes == [("user", ["text"]), ("assistant", ["text", "tool_use"]), ("user", ["tool_result"]),
                      ("assistant", ["text"])]
    use = retry["messages"][1]["content"][1]
    assert use["name"] == "lookup" and use["input"] == {"key": "retry_limit"}
    assert retry["messages"][2]["content"][0] == {"type": "tool_result", "tool_use_id": use["id"], "content": "347",
                                                  "is_error": False}
    assert retry["source"]["model"] == "mockllm/model" and retry["metadata"]["scores"]


def test_inspect_log_json_form_is_detected(tmp_path):
    from inspect_ai.log import read_eval_log, write_eval_log

    path = tmp_path / "run.json"
    write_eval_log(read_eval_log(str(INSPECT_SAMPLE)), str(path), format="json")
    assert [t["messages"] for t in convert_all(path)] == [t["messages"] for t in convert_all(INSPECT_SAMPLE)]


def test_inspect_log_corrupt_input_is_located_and_writes_nothing(tmp_path):
    bad = tmp_path / "broken.eval"
    bad.write_bytes(INSPECT_SAMPLE.read_bytes()[:600])  # a truncated zip
    out = tmp_path / "out"
    with pytest.raises(ContractError) as exc:
        import_files([CLAUDE_SAMPLE, bad], None, out)
    assert str(exc.value).startswith(f"{bad}: not a readable inspect eval log") and "\n" not in str(exc.value)
    assert not out.exists()


def test_unknown_file_kind_is_located(tmp_path):
    path = tmp_path / "trace.txt"
    path.write_text("hello")
    with pytest.raises(ContractError, match=r"trace\.txt"):
        import_files([path], None, tmp_path / "out")
    assert not (tmp_path / "out").exists()
