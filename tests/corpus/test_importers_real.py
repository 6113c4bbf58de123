"""The importers on every real file of the shared data folder, the shipped corpus in
fixtures/real, and the new formats on small synthetic inputs.

Tests marked `needs_data` read the shared data folder ($COMPACTION_EVAL_DATA, else
`shared/data` beside the repository or one of its parents) and skip when it is absent; the
fixtures/real and synthetic tests need nothing outside the repository.
"""

from __future__ import annotations

import gzip
import json
import logging
import re
from collections import Counter
from pathlib import Path

import pytest

from compaction_eval.contracts.labels import lint_against_trace, load_labels
from compaction_eval.contracts.problems import ContractError
from compaction_eval.contracts.traces import load_trace, message_text, trace_files, validate_trace
from compaction_eval.corpus.importers import FILE_FORMATS, convert_all
from compaction_eval.corpus.importers.inline_calls import parse_inline_calls
from compaction_eval.corpus.importers.ship import SOURCES, build, default_data, main
from compaction_eval.corpus.lint import lint

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "fixtures" / "real"
DATA = default_data()
needs_data = pytest.mark.skipif(DATA is None or not DATA.is_dir(),
                                reason="the shared data folder is absent (set COMPACTION_EVAL_DATA to run these)")
# files of the data folder that are documentation, licenses, run summaries or a Crush WAL (read
# with the crush.db beside it), not traces
NOT_TRACES = re.compile(r"(README|SOURCE|LICENSE|ADP_README|DATASET_README)[^/]*$|results_summary\.json$|\.db-wal\.gz$")


def data_files() -> list[Path]:
    return sorted(p for p in DATA.rglob("*") if p.is_file()) if DATA is not None and DATA.is_dir() else []


@pytest.fixture(scope="module")
def converted() -> dict[str, list[dict]]:
    """Path relative to the data folder -> its traces, converted once for the module."""
    logging.getLogger("compaction_eval.corpus.importers").setLevel(logging.ERROR)  # the broken-line warnings
    try:
        return {str(p.relative_to(DATA)): convert_all(p) for p in data_files() if not NOT_TRACES.search(p.name)}
    finally:
        logging.getLogger("compaction_eval.corpus.importers").setLevel(logging.NOTSET)


def tool_pairs(trace: dict) -> tuple[int, int]:
    uses = sum(1 for m in trace["messages"] if isinstance(m["content"], list) for b in m["content"] if b["type"] == "tool_use")
    results = sum(1 for m in trace["messages"] if isinstance(m["content"], list) for b in m["content"] if b["type"] == "tool_result")
    return uses, results


def find_text(trace: dict, needle: str) -> list[int]:
    return [i for i, m in enumerate(trace["messages"]) if needle in message_text(m)]


# ------------------------------------------------------------------ every real file


@needs_data
def test_every_real_file_imports_and_validates_or_fails_on_one_located_line(converted):
    traces = 0
    for path in data_files():
        rel = str(path.relative_to(DATA))
        if NOT_TRACES.search(path.name):
            with pytest.raises(ContractError) as exc:
                convert_all(path)
            text = str(exc.value)
            assert text.startswith(str(path)) and "\n" not in text and "Traceback" not in text
            continue
        assert converted[rel], rel
        for trace in converted[rel]:
            assert validate_trace(trace, rel) == []
            uses, results = tool_pairs(trace)
            assert uses == results
            traces += 1
    # 30 mini-swe-agent, 11 Claude Code, 12 Gemini CLI, 13 OpenHands, 5 SWE-agent, 1 aider,
    # 6 Codex CLI, 7 Crush sessions (3 stores), 8 SpecStory exports (6 Cursor, 1 Copilot, 1 Claude Code)
    assert traces == 93


@needs_data
def test_formats_are_detected_without_from(converted):
    kinds = Counter(t["source"]["kind"] for traces in converted.values() for t in traces)
    assert kinds == {"mini-swe-agent": 30, "claude-code": 11, "gemini-cli": 12, "openai-chat": 15,
                     "openhands-output": 3, "aider-llm-history": 1, "codex-cli": 6, "crush": 7, "specstory": 8}
    assert {"gemini-cli", "openhands-output", "aider-llm-history", "codex-cli", "crush", "specstory"} <= set(FILE_FORMATS)


# ------------------------------------------------------------------ Gemini CLI


@needs_data
def test_gemini_tool_calls_split_into_call_and_result_turns(converted):
    for rel, traces in converted.items():
        if not rel.startswith("gemini-cli/"):
            continue
        [trace] = traces
        src = json.loads((DATA / rel).read_text())["messages"]
        calls = [c for m in src for c in m.get("toolCalls") or []]
        notices = [m for m in src if m["type"] in ("info", "error")]
        with_calls = sum(1 for m in src if m.get("toolCalls"))
        assert len(trace["messages"]) == len(src) - len(notices) + with_calls
        assert tool_pairs(trace) == (len(calls), len(calls))
        assert [n["index"] for n in trace["metadata"]["cli_notices"]] == [i for i, m in enumerate(src) if m in notices]
        ids = [b["id"] for m in trace["messages"] if isinstance(m["content"], list) for b in m["content"] if b["type"] == "tool_use"]
        assert len(ids) == len(set(ids))
        for t, s in enumerate(trace["metadata"]["index_map"]):
            assert src[s]["type"] in ("user", "gemini")
            if t and trace["messages"][t]["role"] == "user" and isinstance(trace["messages"][t]["content"], list):
                assert trace["metadata"]["index_map"][t - 1] == s  # the results of the same source message
    [shortcut] = converted["gemini-cli/m-gemini/session-2025-12-28T03-31-4eb0784d.json"]
    [i] = [i for i, m in enumerate(shortcut["messages"]) if m["role"] == "assistant"
           and any(b.get("input", {}).get("command") == "which gemini" for b in m["content"])]
    assert "thinking" in [b["type"] for b in shortcut["messages"][i]["content"]]
    assert "Output: /usr/bin/gemini" in shortcut["messages"][i + 1]["content"][0]["content"]
    assert {n["text"] for n in shortcut["metadata"]["cli_notices"]} >= {"Request cancelled."}
    assert shortcut["metadata"]["user_prompts"] == 8


# ------------------------------------------------------------------ OpenHands output.jsonl


@needs_data
def test_openhands_output_events_become_paired_messages(converted):
    traces = converted["openhands/multiswebench-llama4/output.jsonl"]
    assert [t["id"] for t in traces] == ["ponylang__ponyc-4595", "ponylang__ponyc-4593", "ponylang__ponyc-4588"]
    records = [json.loads(line) for line in (DATA / "openhands/multiswebench-llama4/output.jsonl").read_text().splitlines()]
    for trace, record in zip(traces, records, strict=False):
        meta = trace["metadata"]
        assert trace["system"].startswith("You are OpenHands agent")
        assert {t["name"] for t in trace["tools"]} == {"execute_bash", "str_replace_editor", "think", "finish"}
        assert [s["kind"] for s in meta["skipped_events"]] == ["recall action", "recall observation"]
        # every event but the system prompt and the two recall events is in a message
        events = [e for group in meta["index_map"] for e in group]
        assert len(events) == len(record["history"]) - 3 == len(set(events))
        assert meta["model"] == "openai/openrouter-llama-4-maverick" and meta["user_prompts"] == 1
    first = traces[0]
    use = first["messages"][1]["content"][-1]
    assert use == {"type": "tool_use", "id": "toolu_01", "name": "execute_bash", "input": {"command": "ls -l /workspace/ponylang__ponyc__0.1"}}
    result = first["messages"][2]["content"][0]
    assert result["tool_use_id"] == "toolu_01" and "CMakeLists.txt" in result["content"]
    assert result["content"].endswith("[The command completed with exit code 0.]")
    # the run ends on finish, which never ran: text, as the openai-chat importer does
    assert first["metadata"]["unanswered_tool_calls"][0]["name"] == "finish"
    assert "[tool call finish]" in message_text(first["messages"][-1])
    # a rejected tool argument: an error observation without a call, kept as user text
    assert find_text(traces[1], "Parameter 'command' is expected to be one of")
    assert traces[2]["metadata"]["error"].startswith("RuntimeError: Agent reached maximum iteration")


# ------------------------------------------------------------------ aider


@needs_data
def test_aider_log_rebuilds_one_conversation_not_33_copies(converted):
    [trace] = converted["aider/friendly-names/.aider.llm.history"]
    calls = trace["metadata"]["calls"]
    assert len(calls) == 33
    prompt_messages = sum(c["prompt_messages"] for c in calls)
    assert prompt_messages > 500  # what concatenating the prompts would give
    assert 33 * 2 <= len(trace["messages"]) <= 33 * 2 + 30  # replies + new requests + the first call's context
    assert [c["response"] for c in calls] == sorted(c["response"] for c in calls)
    texts = [m["content"] for m in trace["messages"]]
    assert texts.count("let's get ci set up to publish to pypi - there's a repository secret in `PYPI_TOKEN`") == 1
    assert texts.count("extend this list to at least 1000 entries") == 3  # asked three times, for three word lists
    assert not any("# *SEARCH/REPLACE block* Rules:" in t for t in texts)  # the appended rules, kept once in metadata
    assert len(trace["metadata"]["editor_handoffs"]) == 10  # the architect's plan is not repeated as a user message
    assert trace["metadata"]["user_prompts"] == 19
    assert trace["system"].startswith("Act as an expert code analyst.")


# ------------------------------------------------------------------ Codex CLI


@needs_data
def test_codex_rollouts_one_message_per_history_item(converted):
    # messages, typed prompts and tool calls per file, as counted in each folder's SOURCE.md
    expected = {"cpolar-connect/rollout-2025-09-16T14-12-31": (150, 13, 58),
                "moonmind/rollout-2025-11-12T17-48-11": (207, 6, 97),
                "moonmind/rollout-2025-11-13T16-00-16": (162, 2, 78),
                "moonmind/rollout-2025-11-13T18-21-11": (88, 1, 42),
                "openprintkit/rollout-2025-10-31T19-02-58": (926, 63, 400),
                "openprintkit/rollout-2025-11-01T11-34-37": (766, 52, 329)}
    seen = {}
    for rel, traces in converted.items():
        if not rel.startswith("codex-cli/"):
            continue
        [trace] = traces
        meta = trace["metadata"]
        folder, name = rel.split("/")[1:]
        seen[f"{folder}/{name[:len('rollout-2025-09-16T14-12-31')]}"] = (len(trace["messages"]), meta["user_prompts"], meta["tool_calls"])
        assert "unanswered_tool_calls" not in meta and "orphan_tool_outputs" not in meta
        lines = (DATA / rel).read_text(encoding="utf-8").splitlines()
        history = [n for n, line in enumerate(lines, 1) if '"type":"response_item"' in line
                   and not re.search(r'"payload":\{"type":"(reasoning|ghost_snapshot)"', line)]
        # every history item is in exactly one trace message; nothing is doubled from event_msg
        assert len(trace["messages"]) == len(history)
        assert sorted(n for group in meta["index_map"] for n in group if n in set(history)) == history
    assert seen == expected
    [cpolar] = converted["codex-cli/cpolar-connect/rollout-2025-09-16T14-12-31-613a9a68-8816-40b2-a2d4-041ade599da6.jsonl"]
    assert cpolar["metadata"]["resumed"] is True and len(cpolar["metadata"]["sessions"]) == 2
    assert cpolar["metadata"]["turns_aborted"] == 2


# ------------------------------------------------------------------ Crush


@needs_data
def test_crush_stores_one_trace_per_session_with_sub_agents(converted):
    # rows per session as counted in each folder's SOURCE.md (the WAL read where it is shipped)
    sessions = {rel: [(t["id"], len(t["metadata"]["row_map"]), sum(len(r) for r in t["metadata"]["row_map"]))
                      for t in traces] for rel, traces in converted.items() if rel.startswith("crush/")}
    assert sessions == {
        "crush/dbos-transact-golang/crush.db": [("a20c5ed5-41d4-45f7-88eb-7ba0645f1341", 78, 78),
                                                ("f306c145-4c83-492c-b575-739c30bbced4", 4, 4)],
        "crush/dbr/crush.db": [("9da7d0cd-971b-4040-bb2b-c9e19a088dfb", 280, 280), ("call_15c3877e300e486883f29b84", 6, 6)],
        "crush/quay/crush.db": [("17c2d974-eab7-4a44-83d2-97c5186a5789", 13, 12),  # its last call never returned
                                ("5ee78d3f-abf5-487a-82f0-02cf36a0e8ee", 17, 17),
                                ("toolu_vrtx_01LWrvAJeVgibzAgkSFVDkVe", 24, 24)]}
    main, sub = converted["crush/dbr/crush.db"]
    assert main["metadata"]["wal"] == "crush.db-wal.gz" and main["metadata"]["user_prompts"] == 18
    assert main["metadata"]["sub_agents"][0]["session"] == sub["id"] and sub["metadata"]["parent_session"] == main["id"]
    assert tool_pairs(main) == (128, 128)
    [init, *_] = converted["crush/quay/crush.db"]
    assert init["metadata"]["unanswered_tool_calls"] == [{"index": 11, "tool_call_id": "toolu_vrtx_014q1yp4eJvJx17U1zxDStmn"}]
    assert converted["crush/dbos-transact-golang/crush.db"][0]["metadata"]["wal"].startswith("none")


# ------------------------------------------------------------------ SpecStory


@needs_data
def test_specstory_exports_every_turn_and_tool_step(converted):
    # user turns and tool steps per file; the user turns are those of each folder's SOURCE.md
    expected = {"claude-code/munsellspace-specstory/2025-12-06_19-04-39Z-hello-claude-we-have.md": (11, 32),
                "copilot/tree-sitter-languages-rs-specstory/2025-12-15_23-48Z-initialization-process-discussion.md": (4, 66),
                "cursor/mcp-rag-server-specstory/2025-07-24_19-57Z-tworzenie-serwera-mcp-rag-z-qdrant.md": (13, 328),
                "cursor/mcp-rag-server-specstory/2025-07-24_21-10Z-sprawdzenie-statusu-pamieci.md": (7, 142),
                "cursor/mcp-rag-server-specstory/2025-07-25_08-17Z-commit-changes-and-switch-to-phase-4.md": (3, 81),
                "cursor/mcp-rag-server-specstory/2025-07-25_08-37Z-przenies-zawartosc-pliku-do-dokumentacji.md": (10, 89),
                "cursor/mcp-rag-server-specstory/2025-07-25_10-16Z-przejdz-do-nastepnego-zadania.md": (8, 265),
                "cursor/mcp-rag-server-specstory/2025-07-25_14-01Z-sprawdzenie-dzialania-narzedzi-mcp-rag.md": (14, 178)}
    got = {rel: (traces[0]["metadata"]["user_prompts"], sum(traces[0]["metadata"]["tool_calls"].values()))
           for rel, traces in converted.items() if rel.endswith(".md")}
    assert got == expected
    for rel in expected:
        [trace] = converted[rel]
        lines = (DATA / rel).read_text(encoding="utf-8").splitlines()
        headings = [n for n, line in enumerate(lines, 1) if re.match(r"^_\*\*(User|Assistant|Agent)\b", line)]
        users = [n for n in headings if lines[n - 1].startswith("_**User")]
        assert [trace["metadata"]["index_map"][i] for i, m in enumerate(trace["messages"])
                if m["role"] == "user" and isinstance(m["content"], str)] == users  # every user turn, in order
        if "tool-use" in "\n".join(lines[:200]):
            assert sum(1 for line in lines if line.startswith("<tool-use")) == sum(trace["metadata"]["tool_calls"].values())
    [copilot] = converted["copilot/tree-sitter-languages-rs-specstory/2025-12-15_23-48Z-initialization-process-discussion.md"]
    assert copilot["metadata"]["models"] == {"copilot/gemini-3-pro-preview": 4}
    [munsell] = converted["claude-code/munsellspace-specstory/2025-12-06_19-04-39Z-hello-claude-we-have.md"]
    assert find_text(munsell, "Do not reinit task-master")


@needs_data
def test_specstory_cursor_google_key_is_caught_by_redaction(converted):
    from compaction_eval.corpus.redact import redact_json

    key = re.compile(r"AIza[0-9A-Za-z_\-]{35}")
    for name in ("2025-07-24_19-57Z-tworzenie-serwera-mcp-rag-z-qdrant.md", "2025-07-24_21-10Z-sprawdzenie-statusu-pamieci.md"):
        [trace] = converted[f"cursor/mcp-rag-server-specstory/{name}"]
        raw = json.dumps(trace["messages"], ensure_ascii=False)
        assert key.search(raw)  # the import itself keeps what the file says
        counts: Counter = Counter()
        assert not key.search(json.dumps(redact_json(trace["messages"], counts), ensure_ascii=False)) and counts["google_api_key"]


# ------------------------------------------------------------------ inline tool calls


@needs_data
def test_inline_tool_calls_parsed_where_certain(converted):
    for rel in ("swe-agent/swesmith-claude/sample_raw.json", "openhands/sweplay/sample_raw.json"):
        samples = json.loads((DATA / rel).read_text())
        for sample, trace in zip(samples, converted[rel], strict=False):
            src = sample["messages"]
            assert len(trace["messages"]) == len(src) - 1  # one trace message per source message, after the system prompt
            inline = trace["metadata"]["inline_calls"]
            calls = sum(1 for m in src if m["role"] == "assistant" and "<function=" in m["content"])
            assert inline["parsed"] + len(inline["kept_as_text"]) == calls
            assert [k["index"] for k in inline["kept_as_text"]] in ([], [len(trace["messages"]) - 1])  # only the final call
            assert tool_pairs(trace) == (inline["parsed"], inline["parsed"])
    arrow = converted["swe-agent/swesmith-claude/sample_raw.json"][0]
    use = arrow["messages"][1]["content"][-1]
    assert use["name"] == "bash" and use["input"] == {"command": 'find /testbed -type f -name "*.py" | grep -v "__pycache__" | sort'}
    assert arrow["messages"][2]["content"][0]["content"].startswith("OBSERVATION:\n/testbed/arrow/__init__.py")
    play = converted["openhands/sweplay/sample_raw.json"][0]
    assert play["messages"][1]["content"][-1]["input"] == {"command": "view", "path": "/workspace"}
    assert "<function=execute_bash>" in play["messages"][0]["content"]  # the in-context example stays text


def test_inline_calls_keep_anything_uncertain_as_text():
    msgs = [
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": "look\n<function=bash>\n<parameter=command>\nls -la\n</parameter>\n</function>"},
        {"role": "user", "content": "OBSERVATION: a.py"},
        {"role": "assistant", "content": "<function=bash><parameter=command>ls</parameter></function> and more"},
        {"role": "user", "content": "?"},
        {"role": "assistant", "content": "<function=a></function><function=b></function>"},
        {"role": "user", "content": "?"},
        {"role": "assistant", "content": "<function=bash><parameter=command>x</parameter>stray</function>"},
        {"role": "user", "content": "?"},
        {"role": "assistant", "content": "<function=submit>\n</function>"},
    ]
    out, info = parse_inline_calls(msgs)
    assert out[1]["content"] == [{"type": "text", "text": "look"},
                                 {"type": "tool_use", "id": "inline_0001", "name": "bash", "input": {"command": "ls -la"}}]
    assert out[2]["content"][0] == {"type": "tool_result", "tool_use_id": "inline_0001", "content": "OBSERVATION: a.py", "is_error": False}
    assert out[3:] == msgs[3:] and info["parsed"] == 1
    assert [k["index"] for k in info["kept_as_text"]] == [3, 5, 7, 9]
    assert "last message" in info["kept_as_text"][-1]["reason"]
    assert validate_trace({"schema": "compaction-eval/trace@1", "id": "x", "messages": out}, "x") == []


# ------------------------------------------------------------------ Claude Code


def broken_lines(path: Path) -> list[int]:
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip() and not line.startswith("//"):
            try:
                json.loads(line)
            except json.JSONDecodeError:
                out.append(n)
    return out


@needs_data
def test_claude_code_broken_lines_skipped_reported_and_counted(converted, caplog):
    expected = {"21037e11": 28, "3af9b1a7": 35, "554b9fa6": 28, "c76e5be5": 1, "d8126fa6": 17}
    for rel, traces in converted.items():
        if not rel.startswith("claude-code/") or not rel.endswith(".jsonl"):  # not the SpecStory export
            continue
        [trace] = traces
        skipped = [s["line"] for s in trace["metadata"]["skipped_lines"]]
        assert skipped == broken_lines(DATA / rel)
        assert len(skipped) == expected.get(Path(rel).name[:8], 0)
    path = DATA / "claude-code/m-claude/c76e5be5-ffd2-4901-a935-885527c83a61.jsonl"
    with caplog.at_level(logging.WARNING, logger="compaction_eval.corpus.importers"):
        [trace] = convert_all(path)
    assert [r.getMessage() for r in caplog.records] == [f"{path}: line 859: skipped: invalid JSON at column 367: Invalid \\escape"]
    # the result on line 859 is lost: its tool_use gets an error result that says where it was
    lost = [b for m in trace["messages"] if m["role"] == "user" for b in m["content"]
            if b["type"] == "tool_result" and "line 859" in b["content"]]
    assert len(lost) == 1 and lost[0]["is_error"] and lost[0]["tool_use_id"] == "toolu_0176bQ5rmozshkuUeNB9iJKJ"


@needs_data
def test_claude_code_real_sessions_keep_every_block(converted):
    for rel, traces in converted.items():
        if not rel.startswith("claude-code/") or not rel.endswith(".jsonl"):  # not the SpecStory export
            continue
        [trace] = traces
        lines = (DATA / rel).read_text(encoding="utf-8").splitlines()
        broken = set(broken_lines(DATA / rel))
        valid = [n for n, line in enumerate(lines, 1) if line.strip() and not line.startswith("//") and n not in broken]
        in_file = {u for n in valid for u in re.findall(r'"type":"tool_use","id":"(toolu_\w+)"', lines[n - 1])}
        kept = {b["id"] for m in trace["messages"] if m["role"] == "assistant" for b in m["content"] if b["type"] == "tool_use"}
        assert kept == in_file, rel  # every tool call of a valid line, none twice
        meta = trace["metadata"]
        assert meta["other_branch_events_skipped"] == meta["resumed_copy_events"], rel  # no abandoned branches here
        uses, results = tool_pairs(trace)
        assert uses == results
    [dns] = converted["claude-code/m-claude/21037e11-89de-484d-abba-8705254aa991.jsonl"]
    assert dns["metadata"]["user_prompts"] == 12 and len(dns["metadata"]["chain_bridges"]) >= 20
    assert any(b["type"] == "thinking" for m in dns["messages"] if m["role"] == "assistant" for b in m["content"])
    [sec] = converted["claude-code/m-claude/3af9b1a7-6512-4883-ad18-320658ced099.jsonl"]
    [summary] = sec["metadata"]["compact_summaries"]
    assert summary["text"].startswith("This session is being continued from a previous conversation")
    assert not find_text(sec, "This session is being continued from a previous conversation")


@needs_data
def test_claude_code_resumed_session_and_sub_agent(converted):
    [share] = converted["claude-code/session-share/general-tool-calls.jsonl"]
    meta = share["metadata"]
    assert meta["comment_lines"] == 2 and meta["skipped_lines"] == []
    [resume] = meta["resumed_sessions"]
    assert resume == {"earlier_thread_lines": [5, 353], "resumed_at_line": 355, "copied_events": 178}
    assert len(find_text(share, "read plan.md and roadmap.md. We are going to plan the work")) == 1  # not twice
    assert find_text(share, "Publish the current session transcript")  # what the resumed session added
    [agent] = converted["claude-code/m-claude/agent-abc3cb6.jsonl"]
    assert agent["id"] == "abc757d1-3da3-42fb-bb7b-ffa293a4ba29-agent-abc3cb6"
    assert agent["metadata"]["sidechain"] is True and agent["metadata"]["parent_session"] == "abc757d1-3da3-42fb-bb7b-ffa293a4ba29"
    assert agent["messages"][0]["content"][0]["text"].startswith("Explore this repository thoroughly")
    [main_session] = converted["claude-code/m-claude/abc757d1-3da3-42fb-bb7b-ffa293a4ba29.jsonl"]
    assert [s["agent_id"] for s in main_session["metadata"]["sub_agents"]] == ["abc3cb6"]


def jsonl(path: Path, lines: list) -> Path:
    """Events as JSON lines; a str is written as it is (a comment or a broken line)."""
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def cc(uuid, parent, kind, content, msg_id=None, **extra):
    message = {"role": kind, "content": content}
    if msg_id:
        message["id"] = msg_id
    return {"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "s-1", "message": message, **extra}


def test_claude_code_bridges_a_broken_line_and_reports_it(tmp_path, caplog):
    # line 4: the result of t1, cut by a redaction script
    broken = ('{"parentUuid":"a1","isSidechain":false,"type":"user","message":{"role":"user","content":'
              '[{"tool_use_id":"t1","type":"tool_result","content":"To: [REDACTED')
    path = jsonl(tmp_path / "s.jsonl", [
        "// recorded for a test",
        cc("u1", None, "user", "fix the build"),
        cc("a1", "u1", "assistant", [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make"}}], "m1"),
        broken,
        cc("a2", "r1", "assistant", [{"type": "text", "text": "The build is fixed."}], "m2"),
        cc("u2", "a2", "user", "thanks"),
    ])
    with caplog.at_level(logging.WARNING, logger="compaction_eval.corpus.importers"):
        [trace] = convert_all(path)
    assert [r.getMessage() for r in caplog.records] == [f"{path}: line 4: skipped: invalid JSON at column 141: Unterminated string starting at"]
    meta = trace["metadata"]
    assert meta["skipped_lines"] == [{"line": 4, "reason": "invalid JSON at column 141: Unterminated string starting at"}]
    assert meta["comment_lines"] == 1
    assert meta["chain_bridges"] == [{"line": 5, "missing_parent": "r1", "via_skipped_line": 4, "matched_by": "position"}]
    # the reply after the lost result stays its own message; the lost result is an error result
    assert [m["role"] for m in trace["messages"]] == ["user", "assistant", "user", "assistant", "user"]
    assert trace["messages"][2]["content"] == [{"type": "tool_result", "tool_use_id": "t1", "is_error": True,
                                                "content": "(no result: line 4 of the transcript, which held it, is not valid JSON)"}]
    assert meta["unanswered_tool_uses"] == 1 and meta["user_prompts"] == 2


def test_claude_code_sidechain_file_is_its_own_trace_and_truncated_file_fails(tmp_path):
    side = [cc("s1", None, "user", "explore", isSidechain=True, agentId="ab12"),
            cc("s2", "s1", "assistant", [{"type": "text", "text": "found it"}], "m1", isSidechain=True, agentId="ab12")]
    [trace] = convert_all(jsonl(tmp_path / "agent-ab12.jsonl", side))
    assert trace["id"] == "s-1-agent-ab12" and trace["metadata"]["sidechain"] is True
    cut = tmp_path / "cut.jsonl"
    cut.write_text(json.dumps(side[0]) + "\n" + json.dumps(side[1])[:40])
    with pytest.raises(ContractError, match=r"cut\.jsonl: line 2, column \d+: invalid JSON: .*cut short"):
        convert_all(cut)


def test_claude_code_resumed_copy_is_spliced(tmp_path):
    first = [cc("u1", None, "user", "start"),
             cc("a1", "u1", "assistant", [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}], "m1"),
             cc("a1b", "a1", "assistant", [{"type": "tool_use", "id": "t2", "name": "Read", "input": {}}], "m1"),
             cc("r2", "a1b", "user", [{"type": "tool_result", "tool_use_id": "t2", "content": "two"}]),
             cc("r1", "a1", "user", [{"type": "tool_result", "tool_use_id": "t1", "content": "one"}]),
             cc("a2", "r1", "assistant", [{"type": "text", "text": "done"}], "m2")]
    # the resumed session copies the chain only (not t2) under new uuids, then goes on
    resumed = [cc("v1", None, "user", "start"),
               cc("b1", "v1", "assistant", [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}], "m1"),
               cc("q1", "b1", "user", [{"type": "tool_result", "tool_use_id": "t1", "content": "one"}]),
               cc("b2", "q1", "assistant", [{"type": "text", "text": "done"}], "m2"),
               cc("v2", "b2", "user", "and now?"),
               cc("b3", "v2", "assistant", [{"type": "text", "text": "now this"}], "m3")]
    [trace] = convert_all(jsonl(tmp_path / "s.jsonl", first + resumed))
    assert [message_text(m) for m in trace["messages"]] == [
        "start", '[tool call Read] {}\n[tool call Read] {}', "two\none", "done", "and now?", "now this"]
    assert trace["metadata"]["resumed_sessions"] == [{"earlier_thread_lines": [1, 6], "resumed_at_line": 7, "copied_events": 4}]
    assert trace["metadata"]["other_branch_events_skipped"] == trace["metadata"]["resumed_copy_events"] == 4


# ------------------------------------------------------------------ new formats on small inputs


def test_gemini_openhands_aider_small_inputs(tmp_path):
    gem = tmp_path / "session-1.json"
    gem.write_text(json.dumps({"sessionId": "g", "messages": [
        {"id": "1", "type": "user", "content": "list files"},
        {"id": "2", "type": "gemini", "content": "Listing.", "thoughts": [{"subject": "Plan", "description": "use ls"}],
         "toolCalls": [{"id": "c1", "name": "run_shell_command", "args": {"command": "ls"}, "status": "success",
                        "result": [{"functionResponse": {"id": "c1", "name": "run_shell_command", "response": {"output": "a.py"}}}],
                        "resultDisplay": "a.py", "description": "Runs a shell command."},
                       {"id": "c2", "name": "read_file", "args": {"path": "b"}, "status": "error",
                        "result": [{"functionResponse": {"id": "c2", "name": "read_file", "response": {"error": "no such file"}}}]}]},
        {"id": "3", "type": "info", "content": "Request cancelled."},
        {"id": "4", "type": "gemini", "content": "a.py only."}]}))
    [g] = convert_all(gem)
    assert [(m["role"], [b["type"] for b in m["content"]] if isinstance(m["content"], list) else "text") for m in g["messages"]] == [
        ("user", "text"), ("assistant", ["thinking", "text", "tool_use", "tool_use"]), ("user", ["tool_result", "tool_result"]),
        ("assistant", ["text"])]
    assert g["messages"][2]["content"][1] == {"type": "tool_result", "tool_use_id": "c2", "content": "no such file", "is_error": True}
    assert g["metadata"]["index_map"] == [0, 1, 1, 3] and g["metadata"]["cli_notices"][0]["text"] == "Request cancelled."
    assert g["tools"][0] == {"name": "run_shell_command", "input_schema": {"type": "object"}, "description": "Runs a shell command."}

    tcm = {"function_name": "execute_bash", "tool_call_id": "call_1", "model_response": {"id": "r1", "choices": [{"message": {
        "content": "Look first.", "tool_calls": [{"id": "call_1", "function": {"name": "execute_bash", "arguments": '{"command": "ls"}'}}]}}]}}
    record = {"instance_id": "demo__demo-1", "metadata": {"llm_config": {"model": "m"}}, "history": [
        {"id": 0, "source": "agent", "action": "system", "args": {"content": "sys", "tools": []}},
        {"id": 1, "source": "user", "action": "message", "args": {"content": "fix it"}},
        {"id": 2, "source": "agent", "action": "run", "tool_call_metadata": tcm, "args": {"command": "ls"}},
        {"id": 3, "source": "agent", "observation": "run", "cause": 2, "tool_call_metadata": tcm, "content": "a.py",
         "extras": {"metadata": {"suffix": "\n[The command completed with exit code 0.]"}}},
        {"id": 4, "source": "agent", "action": "change_agent_state"}]}
    out = tmp_path / "output.jsonl"
    out.write_text(json.dumps(record) + "\n")
    [o] = convert_all(out)
    assert o["id"] == "demo__demo-1" and o["system"] == "sys"
    assert o["messages"][1]["content"] == [{"type": "text", "text": "Look first."},
                                           {"type": "tool_use", "id": "call_1", "name": "execute_bash", "input": {"command": "ls"}}]
    assert o["messages"][2]["content"][0]["content"] == "a.py\n[The command completed with exit code 0.]"
    assert o["metadata"]["skipped_events"] == [{"event": 4, "kind": "change_agent_state action"}]

    log = tmp_path / "chat.llm.history"
    log.write_text("TO LLM 2025-01-01T10:00:00\n-------\nSYSTEM be brief\n-------\nUSER hi\n"
                   "LLM RESPONSE 2025-01-01T10:00:01\nASSISTANT hello\n"
                   "TO LLM 2025-01-01T10:01:00\n-------\nSYSTEM be brief\n-------\nUSER hi\n-------\nASSISTANT hello\n-------\n"
                   "USER bye\nUSER \nUSER # *SEARCH/REPLACE block* Rules:\nUSER \nUSER edit well\n"
                   "LLM RESPONSE 2025-01-01T10:01:01\nASSISTANT bye\n")
    [a] = convert_all(log)
    assert a["system"] == "be brief" and [m["content"] for m in a["messages"]] == ["hi", "hello", "bye", "bye"]
    assert a["metadata"]["reminders"][0]["messages"] == [2]


@pytest.mark.parametrize("name,content,place,expected", [
    ("session-x.json", {"sessionId": "g", "messages": [{"type": "user", "content": "hi"}, {"type": "tool", "content": "?"}]},
     "messages[1].type", "unknown message type 'tool'"),
    ("output.jsonl", [{"instance_id": "a", "history": [{"id": 0, "observation": "run", "tool_call_metadata":
                                                        {"tool_call_id": "x", "function_name": "f"}}]}],
     "line 1: history[0]", "observation for tool call 'x' follows no open call"),
    ("log.llm.history", "TO LLM 2025-01-01T10:00:00\n-------\nBOB hi\n", "line 3", "expected a line starting with SYSTEM"),
])
def test_new_formats_fail_on_one_located_line(tmp_path, name, content, place, expected):
    path = tmp_path / name
    if isinstance(content, str):
        path.write_text(content)
    elif name.endswith(".jsonl"):
        path.write_text("".join(json.dumps(r) + "\n" for r in content))
    else:
        path.write_text(json.dumps(content))
    with pytest.raises(ContractError) as exc:
        convert_all(path)
    assert str(exc.value).startswith(f"{path}: {place}: {expected}") and "\n" not in str(exc.value)


# ------------------------------------------------------------------ fixtures/real (no data needed)


def real_traces() -> list[Path]:
    return sorted(REAL.glob("*/*.json.gz"))


def test_fixtures_real_traces_are_valid_and_described():
    files = real_traces()
    assert Counter(p.parent.name for p in files) == {"mini-swe-agent": 30, "claude-code": 12, "gemini-cli": 12,
                                                     "openhands": 13, "swe-agent": 5, "aider": 1, "codex-cli": 6,
                                                     "crush": 4, "cursor": 6, "copilot": 1}
    assert {p.parent.name for p in files} == set(SOURCES)
    for path in files:
        trace = load_trace(path)
        assert path.name == f"{trace.id}.json.gz"
        for key in ("kind", "path", "license", "repository"):
            assert trace.source.get(key), (path, key)
        assert not trace.source["path"].startswith("/") and "/work/" not in trace.source["path"]
        for key in ("agent", "model", "task_kind"):
            assert isinstance(trace.metadata.get(key), str) and trace.metadata[key], (path, key)
        assert isinstance(trace.metadata.get("user_prompts"), int) and trace.metadata["user_prompts"] >= 1
        raw = path.read_bytes()
        assert raw[4:8] == b"\0\0\0\0"  # gzip mtime 0: the files do not change when regenerated
    for source in SOURCES:
        assert list((REAL / source).glob("SOURCE*.md")), source
        assert list((REAL / source).glob("LICENSE*")) or list((REAL / source).glob("ADP_README*.md")), source
    assert sum(p.stat().st_size for p in REAL.rglob("*") if p.is_file()) < 5_000_000


@pytest.mark.parametrize("source", SOURCES)
def test_fixtures_real_lint_clean(source):
    count, _, problems, skipped = lint([REAL / source], [])
    assert problems == [] and skipped == [] and count == len(list((REAL / source).glob("*.json.gz")))


def test_every_real_label_file_lints_against_its_shipped_trace():
    labels = sorted((ROOT / "labels" / "real").glob("*.yaml"))
    shipped = {p.name.removesuffix(".json.gz"): p for p in REAL.glob("*/*.json.gz")}
    assert labels
    for path in labels:
        lab = load_labels(path)
        assert lab.trace in shipped, f"{path.name}: no shipped trace {lab.trace}"
        assert lint_against_trace(lab, load_trace(shipped[lab.trace])) == [], path.name


# ------------------------------------------------------------------ fixtures/real against the data


@needs_data
def test_shipped_mini_swe_agent_messages_are_what_the_importer_gives_redacted(converted):
    from compaction_eval.corpus.redact import redact_json, redact_text

    for rel, traces in converted.items():
        if not rel.startswith("mini-swe-agent/"):
            continue
        [trace] = traces
        shipped = json.loads(gzip.decompress((REAL / "mini-swe-agent" / f"{trace['id']}.json.gz").read_bytes()))
        assert shipped["id"] == trace["id"] == Path(rel).name.removesuffix(".traj.json")
        # one message per source message, in order; only secret-looking strings differ
        assert len(shipped["messages"]) == len(trace["messages"])
        assert shipped["messages"] == redact_json(trace["messages"]) and shipped["system"] == redact_text(trace["system"])


def test_no_known_secret_shape_is_shipped():
    from compaction_eval.corpus.redact import redact_json

    for path in sorted(REAL.glob("*/*.json.gz")):
        trace = json.loads(gzip.decompress(path.read_bytes()))
        assert redact_json(trace["messages"]) == trace["messages"], f"{path.name} still holds a secret-looking string"


@needs_data
def test_ship_reproduces_fixtures_real_byte_for_byte(tmp_path):
    logging.getLogger("compaction_eval.corpus.importers").setLevel(logging.ERROR)
    try:
        build(DATA, tmp_path / "real")
    finally:
        logging.getLogger("compaction_eval.corpus.importers").setLevel(logging.NOTSET)
    made = {p.relative_to(tmp_path / "real"): p.read_bytes() for p in sorted((tmp_path / "real").rglob("*")) if p.is_file()}
    committed = {p.relative_to(REAL): p.read_bytes() for p in sorted(REAL.rglob("*")) if p.is_file()}
    assert sorted(made) == sorted(committed)
    for rel, data in made.items():
        assert data == committed[rel], f"{rel} differs from a fresh `python -m compaction_eval.corpus.importers.ship`"


def test_ship_without_data_fails_cleanly(tmp_path, capsys):
    assert main(["--data", str(tmp_path / "absent"), "--out", str(tmp_path / "out")]) == 2
    assert "no data folder" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_trace_files_of_fixtures_real_are_found_by_the_corpus_loader():
    assert len(trace_files(REAL)) == 90


def test_sessions_left_out_of_fixtures_real_are_named_with_a_reason():
    skipped = {"f306c145-4c83-492c-b575-739c30bbced4": "SOURCE-dbos-transact-golang.md", "call_15c3877e300e486883f29b84": "SOURCE-dbr.md",
               "17c2d974-eab7-4a44-83d2-97c5186a5789": "SOURCE-quay.md"}
    for tid, source in skipped.items():
        assert not (REAL / "crush" / f"{tid}.json.gz").exists()
        text = (REAL / "crush" / source).read_text(encoding="utf-8")
        section = text[text.index("## Not shipped in fixtures/real"):]
        assert f"- `{tid}`: " in section
    [sub] = [load_trace(p) for p in (REAL / "crush").glob("toolu_*.json.gz")]
    assert sub.metadata["parent_session"] == "5ee78d3f-abf5-487a-82f0-02cf36a0e8ee"  # shipped with its parent
    for path in (REAL / "cursor").glob("*.json.gz"):
        assert any("files the agent read" in item for item in load_trace(path).metadata["left_out"])  # Cursor keeps no reads
