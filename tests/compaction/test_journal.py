"""The answer journal (compaction/journal.py) under a paid provider: keyed like inspect's cache,
replayed when inspect's cache lost the entry, damaged entries detected and asked again, no
credentials written, nothing for the offline stand-ins. In process, with a provider that
counts its calls (the kill itself is tested over HTTP in tests/loopback)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading

import pytest
from inspect_ai.model import ChatMessageUser, GenerateConfig, ModelAPI, ModelOutput, ModelUsage, get_model, modelapi
from inspect_ai.tool import ToolInfo, ToolParams

from compaction_eval.cli.main import journal_notes
from compaction_eval.compaction.cache import generate_cached, off_the_loop
from compaction_eval.compaction.journal import SUFFIX, AnswerJournal, decode_entry, encode_entry, journal_root, model_folder

CALLS: list[str] = []


@modelapi(name="paidtest")
class PaidTest(ModelAPI):
    """A stand-in for any paid provider: answers `answer to <question> #<n>` and counts calls."""

    def __init__(self, model_name: str, base_url: str | None = None, api_key: str | None = None, config: GenerateConfig | None = None, **kw):
        super().__init__(model_name, base_url, api_key, [], config or GenerateConfig())

    async def generate(self, input, tools, tool_choice, config):
        question = input[-1].text
        CALLS.append(question)
        out = ModelOutput.from_content(model=self.model_name, content=f"answer to {question} #{len(CALLS)}")
        out.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
        return out


@pytest.fixture
def paid():
    CALLS.clear()
    return get_model("paidtest/model", memoize=False)


def ask(model, question: str, **kw) -> ModelOutput:
    return asyncio.run(generate_cached(model, [ChatMessageUser(content=question)], config=GenerateConfig(max_tokens=50), **kw))


def files(root, pattern: str) -> list:
    return sorted(p for p in root.rglob(pattern) if p.is_file()) if root.exists() else []


def inspect_cache(tmp_path):
    return tmp_path / "inspect-cache" / "generate"


def test_each_answer_is_journaled_under_inspects_own_cache_key(paid, tmp_path):
    tools = [ToolInfo(name="bash", description="run a command", parameters=ToolParams())]
    ask(paid, "what failed?")
    asyncio.run(generate_cached(paid, [ChatMessageUser(content="and now?")], config=GenerateConfig(max_tokens=50), tools=tools))
    journaled = files(journal_root(), f"*{SUFFIX}")
    cached = files(inspect_cache(tmp_path), "*")
    assert len(journaled) == 2 and sorted(p.name.removesuffix(SUFFIX) for p in journaled) == sorted(p.name for p in cached)
    assert all(p.parent.name == "paidtest--model" for p in journaled)
    # the journal holds the output only: no request, no headers
    text = journaled[0].read_text()
    assert "what failed?" not in text or "answer to" in text
    assert '"input"' not in text and "headers" not in text


def test_an_answer_lost_from_inspects_cache_comes_from_the_journal(paid, tmp_path):
    first = ask(paid, "what failed?")
    for p in files(inspect_cache(tmp_path), "*"):
        p.unlink()  # the kill came before inspect's cache_store
    again = ask(paid, "what failed?")
    assert CALLS == ["what failed?"]  # not paid twice
    assert again.completion == first.completion and again.usage == first.usage
    assert len(files(inspect_cache(tmp_path), "*")) == 1  # inspect caches it again as usual
    # a different question is asked, and so is the same one without the cache
    ask(paid, "what next?")
    ask(paid, "what failed?", cache=False)
    assert CALLS == ["what failed?", "what next?", "what failed?"]


def _damage(kind: str, path) -> None:
    data = path.read_bytes()
    head, _, body = data.partition(b"\n")
    header = json.loads(head)
    if kind == "truncated":  # a torn write: the file ends early
        path.write_bytes(data[: len(data) - 7])
    elif kind == "header only":
        path.write_bytes(head)
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "flipped byte":
        i = body.index(b"answer to") + 3
        path.write_bytes(head + b"\n" + body[:i] + b"X" + body[i + 1:])
    elif kind == "another question":
        other = dict(header, key="0" * 32)
        path.write_bytes(json.dumps(other).encode() + b"\n" + body)
    elif kind == "not json":
        path.write_bytes(b"\x00\xff garbage \n{]")
    elif kind == "valid checksum, bad output":
        bad = b'{"choices": 7}'
        path.write_bytes(encode_entry(header["model"], header["key"], bad, header["expires"]))
    elif kind == "expired":
        path.write_bytes(encode_entry(header["model"], header["key"], body, 1.0))
    else:
        raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["truncated", "header only", "empty", "flipped byte", "another question", "not json",
                                  "valid checksum, bad output", "expired"])
def test_a_damaged_entry_is_ignored_and_the_question_asked_again(paid, tmp_path, kind, caplog, capsys):
    ask(paid, "what failed?")
    [entry] = files(journal_root(), f"*{SUFFIX}")
    for p in files(inspect_cache(tmp_path), "*"):
        p.unlink()
    _damage(kind, entry)
    with caplog.at_level(logging.WARNING, logger="compaction_eval.compaction.journal"):
        again = ask(paid, "what failed?")
    assert CALLS == ["what failed?", "what failed?"]  # asked again: never a crash, never a wrong answer
    assert again.completion == "answer to what failed? #2"
    if kind != "expired":
        assert "damaged answer-journal entry" in caplog.text
        journal_notes()  # and the command line says so, once
        assert f"ignored a damaged answer-journal entry {entry}" in capsys.readouterr().err
        journal_notes()  # a later command in the same process does not repeat it
        assert "damaged answer-journal entry" not in capsys.readouterr().err
    # and the fresh answer replaced it
    body, why = decode_entry(entry.read_bytes(), "paidtest/model", entry.name.removesuffix(SUFFIX))
    assert why is None and b"#2" in body


def test_an_answer_holding_a_credential_is_stored_without_it(paid, tmp_path, monkeypatch):
    """The provider's answer is cleaned where the provider hands it over (compaction.session's
    guard, the innermost wrapper): the journal, inspect's cache and the caller see the
    credential replaced, never its value."""
    secret = "sk-paidtest-0123456789"
    monkeypatch.setenv("PAIDTEST_API_KEY", secret)
    output = ask(paid, f"echo {secret}")  # the answer would contain it
    assert secret not in output.completion and "[REDACTED:credential]" in output.completion
    [entry] = files(journal_root(), f"*{SUFFIX}")
    assert secret.encode() not in entry.read_bytes() and b"[REDACTED:credential]" in entry.read_bytes()
    [cached] = files(inspect_cache(tmp_path), "*")
    assert secret.encode() not in cached.read_bytes()


def test_temporary_files_of_killed_writers_are_swept_and_never_read(paid, tmp_path):
    folder = journal_root() / model_folder("paidtest/model")
    folder.mkdir(parents=True)
    dead = folder / f".{'0' * 32}.999999999.1.tmp"  # a writer killed before its rename
    live = folder / f".{'1' * 32}.{os.getpid()}.2.tmp"  # a writer still at work
    dead.write_bytes(b"torn")
    live.write_bytes(b"in progress")
    ask(paid, "what failed?")  # the first write into the folder sweeps what dead processes left
    assert not dead.exists() and live.exists()
    assert [p.name for p in folder.iterdir() if p.suffix == SUFFIX] != []


def test_the_offline_stand_ins_write_no_journal(tmp_path):
    model = get_model("extractive/default")
    ask(model, "Summarise: the build failed in src/app.py.")
    assert not journal_root().exists() or files(journal_root(), "*") == []


def test_off_the_loop_uses_a_worker_thread_only_when_paid():
    def where() -> int:
        return threading.get_ident()

    async def both() -> tuple[int, int, int]:
        return await off_the_loop(where, paid=False), await off_the_loop(where, paid=True), threading.get_ident()

    inline, worker, loop = asyncio.run(both())
    assert inline == loop and worker != loop


def test_journal_paths_refuse_what_is_not_a_key(tmp_path):
    journal = AnswerJournal(tmp_path)
    with pytest.raises(ValueError):
        journal.path("anthropic/x", "../../etc/passwd")
    assert journal.path("../../x", "a" * 32).resolve().is_relative_to(tmp_path.resolve())


def test_docstring_examples_run():
    import doctest

    from compaction_eval.compaction import journal

    result = doctest.testmod(journal)
    assert result.attempted > 0 and result.failed == 0
