"""The generate cache and the answer journal are read only from a place no checkout supplies,
build data only, and never open a FIFO, a symlink or a directory (compaction/cachefiles.py).
In process with a paid provider that counts its calls (over HTTP: tests/loopback)."""

from __future__ import annotations

import asyncio
import os
import pickle
import threading

import pytest
from inspect_ai.model import ChatMessageUser, GenerateConfig, ModelAPI, ModelOutput, get_model, modelapi

from compaction_eval.cli.main import journal_notes
from compaction_eval.compaction import cachefiles
from compaction_eval.compaction.cache import generate_cached
from compaction_eval.compaction.journal import SUFFIX, journal_root
from compaction_eval.contracts.problems import ContractError

CALLS: list[str] = []


@modelapi(name="paidcache")
class PaidCache(ModelAPI):
    """A paid provider (not a stand-in: its answers are cached and journaled) that counts calls."""

    def __init__(self, model_name: str, base_url: str | None = None, api_key: str | None = None, config: GenerateConfig | None = None, **kw):
        super().__init__(model_name, base_url, api_key, [], config or GenerateConfig())

    async def generate(self, input, tools, tool_choice, config):
        CALLS.append(input[-1].text)
        return ModelOutput.from_content(model=self.model_name, content=f"answer to {input[-1].text}")


@pytest.fixture
def paid():
    CALLS.clear()
    return get_model("paidcache/model", memoize=False)


def ask(model, question: str):
    return asyncio.run(generate_cached(model, [ChatMessageUser(content=question)], config=GenerateConfig(max_tokens=50)))


def entries(tmp_path):
    return sorted(p for p in (tmp_path / "inspect-cache" / "generate").rglob("*") if p.is_file())


def test_inspect_still_calls_the_cache_functions_we_replace():
    from inspect_ai.model import _model

    source = open(_model.__file__).read()
    assert "cache_fetch(cache_entry)" in source and "cache_store(entry=cache_entry, output=output)" in source


def test_an_entry_that_names_code_is_refused_not_run(paid, tmp_path, capsys):
    ask(paid, "what failed?")
    (entry,) = entries(tmp_path)
    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self):
            return os.mkdir, (str(marker),)

    entry.write_bytes(pickle.dumps((None, Evil())))
    for answer in journal_root().rglob(f"*{SUFFIX}"):
        answer.unlink()
    ask(paid, "what failed?")
    assert not marker.exists()
    assert CALLS == ["what failed?", "what failed?"]  # asked again
    journal_notes()
    assert f"ignored a generate-cache entry {entry}: not a cached answer (posix.mkdir is not data: refused)" in capsys.readouterr().err
    assert pickle.loads(entry.read_bytes())[1].completion.startswith("answer to")  # replaced by the new answer


@pytest.mark.parametrize("kind", ["fifo", "symlink", "directory"])
def test_a_non_regular_entry_is_refused_unread(paid, tmp_path, capsys, kind):
    ask(paid, "what failed?")
    (entry,) = entries(tmp_path)
    (answer,) = journal_root().rglob(f"*{SUFFIX}")
    for path in (entry, answer):
        path.unlink()
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "symlink":
            path.symlink_to("/dev/zero")
        else:
            path.mkdir()
    done = threading.Event()
    thread = threading.Thread(target=lambda: (ask(paid, "what failed?"), done.set()), daemon=True)
    thread.start()
    thread.join(timeout=120)  # a FIFO opened for reading or writing would block here for ever
    assert done.is_set(), f"a {kind} entry blocked the call"
    assert len(CALLS) == 2
    err = journal_notes() or capsys.readouterr().err
    noun = {"fifo": "a FIFO", "symlink": "a symbolic link", "directory": "a directory"}[kind]
    assert f"{answer}: {noun}" in err
    # inspect itself declines an entry path that resolves outside its cache (the symlink)
    assert kind == "symlink" or f"{entry}: {noun}" in err


def test_a_cache_inside_a_git_work_tree_is_refused_unless_named(tmp_path):
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    inside = tmp_path / "repo" / ".compaction-eval" / "inspect-cache"
    with pytest.raises(ContractError, match="inside the git work tree"):
        cachefiles.check_cache_root(inside, {})
    named = {cachefiles.CACHE_ENV: str(inside.parent)}
    assert cachefiles.check_cache_root(inside, named) == inside
    assert cachefiles.check_cache_root(tmp_path / "elsewhere", {}) == tmp_path / "elsewhere"


def test_the_default_cache_is_the_user_cache_directory_not_the_working_directory(tmp_path):
    assert cachefiles.default_cache_root({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "compaction-eval"
    assert cachefiles.default_cache_root({cachefiles.CACHE_ENV: str(tmp_path / "mine"), "XDG_CACHE_HOME": "x"}) == tmp_path / "mine"


def test_an_agent_answer_with_tool_calls_is_data_and_is_reused():
    """A tool call is a plain dataclass, not a pydantic model: the data-only unpickler builds
    it (before, every cached agent turn with a tool call was refused and paid for again)."""
    from inspect_ai.tool import ToolCall

    output = ModelOutput.for_tool_call(model="m", tool_name="bash", tool_arguments={"cmd": "ls"})
    expiry, loaded = cachefiles.load_entry(pickle.dumps((None, output)))
    assert expiry is None and loaded == output
    assert isinstance(loaded.choices[0].message.tool_calls[0], ToolCall)



def test_an_inspect_class_that_is_not_data_is_refused():
    from inspect_ai.model import Model

    with pytest.raises(pickle.UnpicklingError, match="is not data"):
        cachefiles.load_entry(pickle.dumps((None, Model)))
