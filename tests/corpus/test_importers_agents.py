"""The Codex CLI, Crush and SpecStory importers on small shipped samples (cut down from the
real sessions of the shared data folder; see tests/data/importers/README.md), so they run
without ../shared, and on malformed inputs, which fail on one located line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compaction_eval.contracts.problems import ContractError
from compaction_eval.contracts.traces import message_text, validate_trace
from compaction_eval.corpus.importers import convert_all

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "tests" / "data" / "importers"
CODEX = SAMPLES / "codex-cli-rollout.jsonl"


def shapes(trace: dict) -> list[tuple[str, object]]:
    return [(m["role"], [b["type"] for b in m["content"]] if isinstance(m["content"], list) else "text")
            for m in trace["messages"]]


def one_line_error(path: Path, place: str, message: str) -> None:
    with pytest.raises(ContractError) as exc:
        convert_all(path)
    text = str(exc.value)
    assert text.startswith(f"{path}: {place}") and message in text and "\n" not in text, text


# ------------------------------------------------------------------ Codex CLI


def test_codex_rollout_history_paired_and_events_not_doubled():
    [trace] = convert_all(CODEX)
    assert validate_trace(trace, "t") == [] and trace["source"]["kind"] == "codex-cli"
    assert trace["id"] == "codex-cli-rollout"  # the file name, as for Gemini CLI sessions
    assert shapes(trace) == [
        ("user", "text"), ("user", "text"),                 # the injected environment context, the typed prompt
        ("assistant", ["thinking", "text"]),                # reasoning summary + the preamble
        ("assistant", ["tool_use"]), ("user", ["tool_result"]),   # update_plan
        ("assistant", ["tool_use"]), ("user", ["tool_result"]),   # shell
        ("assistant", ["thinking", "tool_use"]), ("user", ["tool_result"]),
    ]
    assert trace["messages"][1]["content"] == "检查目前项目的设计"
    # the UI copies (event_msg agent_message / agent_reasoning) add nothing
    assert sum("我先梳理仓库结构与文档" in message_text(m) for m in trace["messages"]) == 1
    plan = trace["messages"][3]["content"][0]
    assert plan["name"] == "update_plan" and plan["input"]["plan"][0]["step"] == "Inventory files and structure"
    shell = trace["messages"][5]["content"][0]
    assert shell["input"]["command"][:2] == ["bash", "-lc"]
    out = trace["messages"][6]["content"][0]
    assert out["tool_use_id"] == shell["id"] and out["content"].startswith("total 112\n")  # unwrapped from {"output", "metadata"}
    meta = trace["metadata"]
    assert meta["user_prompts"] == 1 and meta["models"] == {"gpt-5-codex": 3} and meta["resumed"] is True
    assert [s["id"] for s in meta["sessions"]] == ["613a9a68-8816-40b2-a2d4-041ade599da6", "9cd28a74-da7e-4458-a91a-fffec2be9d7a"]
    assert meta["index_map"][2] == [11, 12] and meta["tool_calls"] == 3


def codex_lines(path: Path, items: list[dict]) -> Path:
    head = {"timestamp": "t", "type": "session_meta", "payload": {"id": "s1", "cli_version": "0.58.0"}}
    path.write_text("".join(json.dumps(r) + "\n" for r in [head, *({"timestamp": "t", "type": "response_item", "payload": p}
                                                                   for p in items)]))
    return path


def test_codex_parallel_custom_and_interrupted_calls(tmp_path):
    path = codex_lines(tmp_path / "rollout-x.jsonl", [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "patch it"}]},
        {"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": "*** Begin Patch"},
        {"type": "function_call", "call_id": "c2", "name": "shell", "arguments": '{"command": ["ls"]}'},
        {"type": "custom_tool_call_output", "call_id": "c1", "output": '{"output": "Success.", "metadata": {"exit_code": 0}}'},
        {"type": "function_call_output", "call_id": "c2", "output": '{"output": "no", "metadata": {"exit_code": 2}}'},
        {"type": "function_call", "call_id": "c3", "name": "shell", "arguments": "not json"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "stop"}]},
        {"type": "function_call_output", "call_id": "c9", "output": "late"},
    ])
    [trace] = convert_all(path)
    assert shapes(trace) == [("user", "text"), ("assistant", ["tool_use", "tool_use"]), ("user", ["tool_result", "tool_result"]),
                             ("assistant", ["tool_use"]), ("user", ["tool_result"]), ("user", "text"), ("user", "text")]
    assert trace["messages"][1]["content"][0]["input"] == {"input": "*** Begin Patch"}
    assert trace["messages"][2]["content"][1] == {"type": "tool_result", "tool_use_id": "c2", "content": "no\n[exit code 2]", "is_error": True}
    assert trace["messages"][3]["content"][0]["input"] == {"_raw": "not json"}
    assert trace["messages"][4]["content"][0]["is_error"] is True
    meta = trace["metadata"]
    assert meta["unanswered_tool_calls"] == [{"index": 3, "call_id": "c3"}] and meta["orphan_tool_outputs"] == [9]
    assert trace["messages"][6]["content"].startswith("[tool output for c9; its call is not in the rollout]")


def test_codex_malformed_inputs_fail_on_one_located_line(tmp_path):
    cut = tmp_path / "rollout-cut.jsonl"
    lines = CODEX.read_text(encoding="utf-8").splitlines()
    cut.write_text("\n".join(lines[:5]) + "\n" + lines[5][:60], encoding="utf-8")
    one_line_error(cut, "line 6, column", "cut short")
    bad = codex_lines(tmp_path / "rollout-bad.jsonl", [{"type": "function_call", "name": "shell", "arguments": "{}"}])
    one_line_error(bad, "line 2: payload.call_id", "function_call without a call_id")
    role = codex_lines(tmp_path / "rollout-role.jsonl", [{"type": "message", "role": "tool", "content": []}])
    one_line_error(role, "line 2: payload.role", "unknown message role 'tool'")
    empty = codex_lines(tmp_path / "rollout-empty.jsonl", [])
    one_line_error(empty, "", "no conversation")


# ------------------------------------------------------------------ Crush

CRUSH = SAMPLES / "crush" / "crush.db"


def test_crush_store_read_with_its_wal_without_touching_it():
    before = sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in CRUSH.parent.iterdir())
    main, child = convert_all(CRUSH)
    assert sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in CRUSH.parent.iterdir()) == before  # no -shm, no change
    assert validate_trace(main, "m") == [] and validate_trace(child, "c") == []
    assert main["id"] == "5ee78d3f-abf5-487a-82f0-02cf36a0e8ee" and child["id"] == "toolu_vrtx_01LWrvAJeVgibzAgkSFVDkVe"
    assert shapes(main)[:4] == [("user", "text"), ("assistant", ["text", "tool_use"]), ("user", ["tool_result"]),
                                ("assistant", ["text", "tool_use"])]
    assert len(main["messages"]) == 17 and main["messages"][0]["content"].startswith("Let's work on issue PROJQUAY-9272")
    agent_call = main["messages"][1]["content"][1]
    assert agent_call["name"] == "agent" and agent_call["input"]["prompt"].startswith("I need help with PROJQUAY-9272")
    grep = main["messages"][4]["content"][0]
    assert grep["content"].startswith("Found 45 matches") and grep["is_error"] is False
    meta = main["metadata"]
    assert meta["sub_agents"] == [{"session": child["id"], "tool_use_id": agent_call["id"], "index": 1}]
    assert meta["user_prompts"] == 1 and meta["models"] == {"claude-sonnet-4@20250514": 8} and meta["wal"] == "crush.db-wal.gz"
    assert meta["finish_reasons"]["permission_denied"] == 1
    assert child["metadata"]["parent_session"] == main["id"] and child["metadata"]["sub_agent"] is True
    assert len(child["messages"]) == 7 and child["messages"][0]["content"].startswith("I need help with PROJQUAY-9272")


def test_crush_store_without_its_wal_is_the_last_checkpoint(tmp_path):
    (tmp_path / "crush.db").write_bytes(CRUSH.read_bytes())
    [main] = convert_all(tmp_path / "crush.db")  # the sub-agent's rows are in the WAL only
    assert main["id"] == "5ee78d3f-abf5-487a-82f0-02cf36a0e8ee" and main["metadata"]["wal"].startswith("none")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["crush.db"]


def crush_db(path: Path, rows: list[tuple[str, str, list]]) -> Path:
    """A minimal store: one session, messages (role, parts) in order."""
    import sqlite3

    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY, parent_session_id TEXT, title TEXT, message_count INTEGER, "
                 "prompt_tokens INTEGER, completion_tokens INTEGER, cost REAL, updated_at INTEGER, created_at INTEGER, "
                 "summary_message_id TEXT)")
    conn.execute("CREATE TABLE messages (id TEXT PRIMARY KEY, session_id TEXT, role TEXT, parts TEXT, model TEXT, "
                 "created_at INTEGER, updated_at INTEGER, finished_at INTEGER, provider TEXT)")
    conn.execute("INSERT INTO sessions VALUES ('s1', NULL, 't', 0, 0, 0, 0.0, 1, 1, NULL)")
    conn.executemany("INSERT INTO messages VALUES (?, 's1', ?, ?, 'm', 5, 5, NULL, 'p')",
                     [(mid, role, parts if isinstance(parts, str) else json.dumps(parts)) for mid, role, parts in rows])
    conn.commit()
    conn.close()
    return path


def part(kind: str, **data) -> dict:
    return {"type": kind, "data": data}


def test_crush_parallel_results_split_rows_and_a_call_left_open(tmp_path):
    path = crush_db(tmp_path / "crush.db", [
        ("m1", "user", [part("text", text="look"), part("finish", reason="stop")]),
        ("m2", "assistant", [part("reasoning", thinking="two reads"), part("tool_call", id="c1", name="view", input='{"file_path": "a"}'),
                             part("tool_call", id="c2", name="view", input="{}")]),
        ("m3", "tool", [part("tool_result", tool_call_id="c1", content="A", is_error=False)]),
        ("m4", "tool", [part("tool_result", tool_call_id="c2", content="no such file", is_error=True)]),
        ("m5", "assistant", [part("tool_call", id="c3", name="bash", input="ls"), part("finish", reason="canceled", message="Request cancelled")]),
        ("m6", "user", [part("text", text="stop")]),
    ])
    [trace] = convert_all(path)
    assert shapes(trace) == [("user", "text"), ("assistant", ["thinking", "tool_use", "tool_use"]),
                             ("user", ["tool_result", "tool_result"]),  # two tool rows, one answer message
                             ("assistant", ["tool_use"]), ("user", ["tool_result"]), ("user", "text")]
    assert trace["messages"][2]["content"][1]["is_error"] is True and trace["messages"][3]["content"][0]["input"] == {"_raw": "ls"}
    meta = trace["metadata"]
    assert meta["unanswered_tool_calls"] == [{"index": 3, "tool_call_id": "c3"}] and meta["row_map"] == [["m1"], ["m2"], ["m3", "m4"], ["m5"], [], ["m6"]]
    assert meta["finish_notes"] == [{"row": "m5", "reason": "canceled", "message": "Request cancelled", "details": None}]


def test_crush_malformed_inputs_fail_on_one_located_line(tmp_path):
    fake = tmp_path / "fake" / "crush.db"
    fake.parent.mkdir()
    fake.write_text("not a database\n")
    one_line_error(fake, "byte 0", "not an SQLite database")
    bad = crush_db(tmp_path / "crush.db", [("m1", "user", "[{\"type\": \"text\", \"data\": ")])
    one_line_error(bad, "messages row m1: parts", "invalid JSON")
    wal = tmp_path / "crush.db-wal.gz"
    wal.write_bytes(b"")
    one_line_error(wal, "", "a Crush WAL file: import the database beside it (crush.db)")
    import sqlite3

    empty = tmp_path / "other" / "crush.db"
    empty.parent.mkdir()
    sqlite3.connect(empty).execute("CREATE TABLE t (x)").connection.close()
    one_line_error(empty, "", "not a readable Crush store: no such table: sessions")


# ------------------------------------------------------------------ SpecStory


def test_specstory_cursor_steps_become_paired_tool_calls():
    [trace] = convert_all(SAMPLES / "specstory-cursor.md")
    assert validate_trace(trace, "t") == [] and trace["source"]["kind"] == "specstory"
    meta = trace["metadata"]
    assert meta["user_prompts"] == 3 and meta["layout"].startswith("specstory (Cursor layout")
    assert any("Read file" in x or "read" in x for x in meta["left_out"])  # says what the export leaves out
    assert meta["tool_calls"] == {"edit_file": 1, "health_check": 1, "listed_current_directory": 1, "read_file": 3,
                                  "run_terminal_cmd": 1, "searched_codebase": 1, "sync_status": 1}
    first = trace["messages"][1]["content"]
    assert first[0]["text"].startswith("I'll check the memory status") and first[1]["name"] == "sync_status"
    assert first[1]["input"] == {"server": "c-basic-memory", "project": "null"}
    assert trace["messages"][2]["content"][0]["content"].startswith("# Basic Memory Sync Status")
    read = next(b for m in trace["messages"] if m["role"] == "assistant" and isinstance(m["content"], list)
                for b in m["content"] if b.get("name") == "read_file")
    assert read["input"] == {"target_file": "src/mcp_rag_server/server.py"}
    shell = trace["messages"][-2]["content"][-1]
    assert shell["name"] == "run_terminal_cmd" and shell["input"] == {"command": "chmod +x start_services.sh"}
    assert trace["messages"][-1]["content"][0]["content"] == "rafalwolak@MacBook-Pro rag % chmod +x start_services.sh"
    edit = next(b for m in trace["messages"] if m["role"] == "assistant" and isinstance(m["content"], list)
                for b in m["content"] if b.get("name") == "edit_file")
    assert edit["input"]["target_file"] == "src/mcp_rag_server/server.py" and "```diff" in edit["input"]["edit"]
    assert [m["content"] for m in trace["messages"] if m["role"] == "user" and isinstance(m["content"], str)] == [
        "sprawdź status pamięci", "sprawdź status pamięci rag",
        "odpowiedź helth check z MCP rag zwraca że qdrant, mem0 i ogólnie rag nie działa"]


def test_specstory_v2_copilot_and_claude_code():
    [copilot] = convert_all(SAMPLES / "specstory-copilot.md")
    meta = copilot["metadata"]
    assert meta["agent_tool"] == "vscode" and meta["session_id"] == "33d319a8-3350-4dc2-9caf-b9410c4265f0"
    assert meta["models"] == {"copilot/gemini-3-pro-preview": 1} and meta["layout"] == "specstory v2.1.0"
    term = copilot["messages"][-2]["content"][0]
    assert term["name"] == "run_in_terminal" and term["input"]["command"] == "tree-sitter --version"
    assert "terminalTheme" not in term["input"]  # display state is left out
    assert copilot["messages"][-1]["content"][0]["content"] == "tree-sitter 0.26.3"
    [claude] = convert_all(SAMPLES / "specstory-claude-code.md")
    assert shapes(claude) == [("user", "text"), ("assistant", ["thinking", "text", "tool_use"]), ("user", ["tool_result"]),
                              ("assistant", ["tool_use"]), ("user", ["tool_result"]), ("assistant", ["thinking", "text"])]
    assert claude["metadata"]["models"] == {"claude-opus-4-5-20251101": 6} and claude["metadata"]["agent_tool"] == "Claude Code"
    assert "1→# FUTURE development" in claude["messages"][2]["content"][0]["content"]
    # the `---` rule inside the read file's code block is content, not a step boundary
    assert "11. Berlin, B., & Kay, P. (1969)" in claude["messages"][2]["content"][0]["content"]


def test_specstory_fences_and_tags_are_content_where_markdown_says_so(tmp_path):
    path = tmp_path / "s.md"
    path.write_text("<!-- Generated by SpecStory -->\n\n# t\n\n_**User**_\n\nshow me\n\n---\n\n_**Assistant**_\n\n"
                    "Here is a sample:\n\n```md\n_**User**_\n---\n<details>\n```\n\nand `<details>` in prose.\n\n---\n\n"
                    "<details><summary>Edit file: a.md</summary>\n\n```diff\n+ ```\n ```\n+ x\n```\n\n</details>\n\n---\n\n"
                    "Done, and here is an unclosed\n\n```bash\nls\n\n---\n\n_**User**_\n\nthanks\n\n---\n\n_**Assistant**_\n\nok\n")
    [trace] = convert_all(path)
    assert shapes(trace) == [("user", "text"), ("assistant", ["text", "tool_use"]), ("user", ["tool_result"]),
                             ("assistant", ["text"]), ("user", "text"), ("assistant", ["text"])]
    assert trace["messages"][1]["content"][0]["text"].endswith("and `<details>` in prose.")
    assert "+ x" in trace["messages"][1]["content"][1]["input"]["edit"]
    assert trace["metadata"]["unclosed_code_fences"] == 1 and trace["metadata"]["user_prompts"] == 2


def test_specstory_malformed_inputs_fail_on_one_located_line(tmp_path):
    empty = tmp_path / "empty.md"
    empty.write_text("<!-- Generated by SpecStory -->\n\n# Untitled (2025-07-24 19:57Z)\n\n")
    one_line_error(empty, "", "no _**User**_ and _**Assistant**_/_**Agent**_ turns")
    cut = tmp_path / "cut.md"
    lines = (SAMPLES / "specstory-copilot.md").read_text(encoding="utf-8").splitlines()
    cut.write_text("\n".join(lines[:20]) + "\n", encoding="utf-8")  # inside the first <tool-use>
    one_line_error(cut, "line 15", "a <tool-use> opened here is never closed")
    plain = tmp_path / "notes.md"
    plain.write_text("# notes\n\n_**User**_\n\nhi\n")
    one_line_error(plain, "", "not a trace file this tool reads")


def test_import_redacts_by_default_and_keeps_secrets_only_when_asked(tmp_path, capsys):
    from compaction_eval.cli.main import main

    fake = "AIza" + "Sy" + "0123456789abcdefghijABCDEFGHIJ_-x"  # the shape of a Google API key, not a real one
    src = tmp_path / "s.md"
    src.write_text(f"<!-- Generated by SpecStory -->\n\n_**User**_\n\nuse GEMINI_KEY {fake}\n\n---\n\n_**Assistant**_\n\nok\n")
    assert main(["import", str(src), "--out", str(tmp_path / "out")]) == 0
    written = json.loads((tmp_path / "out" / "s.json").read_text())
    assert fake not in json.dumps(written) and written["metadata"]["redactions"] == {"google_api_key": 1}
    assert main(["import", str(src), "--out", str(tmp_path / "raw"), "--keep-secrets"]) == 0
    assert fake in (tmp_path / "raw" / "s.json").read_text() and "redactions" not in json.loads((tmp_path / "raw" / "s.json").read_text())["metadata"]
    capsys.readouterr()
