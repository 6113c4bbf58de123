"""The one model session, checked on every subcommand that can call a model (the CLI is
enumerated: a command added later without an entry here fails the first test), each run as a
user runs it (a subprocess, the real SDK over HTTP to the loopback server):

- `--redact`: no secret of a covered kind reaches any file the command writes (results, run
  files, inspect's log, the generate cache, the answer journal) or its output;
- always: the API key's value reaches nothing, even when the trace holds it and when an
  answer echoes it (the judge below does);
- Ctrl-C while a request is in flight: one line, exit 130, no run directory or result file.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from collections import Counter
from pathlib import Path

import pytest

from compaction_eval.cli.main import build_parser
from compaction_eval.cli.session import model_commands
from compaction_eval.contracts.labels import load_labels
from compaction_eval.loopback import LoopbackServer
from conftest import ROOT

MODEL = "anthropic/claude-test"
DUMMY_KEY = "sk-ant-DUMMY-SESSION-KEY-0123456789"
SECRETS = {  # one of each covered kind the trace carries (corpus.redact)
    "aws_access_key": "AKIAIOSFODNN7EXAMPLE",
    "github_token": "ghp_" + "Ab3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6",
    "gitlab_token": "glpat-" + "x7Yz9Qw2Er4Ty6Ui8Op0",
    "huggingface_token": "hf_" + "QwErTyUiOpAsDfGhJkLzXcVbNm1234567890",
    "stripe_key": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "url_password": "Hunter2Secret",  # in postgres://admin:Hunter2Secret@db.internal
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
}
TRACE_ID = "synth-dep-upgrade-001"
LABELS = ROOT / "labels" / f"{TRACE_ID}.yaml"
OTHER_ID = "synth-ci-broken-001"
HANDOFF = ROOT / "prompts" / "handoff.j2"


def echo_judge(summary: str, facts: list[dict]) -> str:
    """A judge whose every reason echoes the API key (an answer the request never held)."""
    return json.dumps([{"id": f["id"], "kept": True, "quote": "", "reason": f"checked with {DUMMY_KEY}"} for f in facts])


def _secret_trace(folder: Path) -> Path:
    data = json.loads(gzip.open(ROOT / "fixtures" / "traces" / f"{TRACE_ID}.json.gz").read())
    line = (f"\nexport AWS_ACCESS_KEY_ID={SECRETS['aws_access_key']} GH={SECRETS['github_token']} "
            f"GL={SECRETS['gitlab_token']} HF={SECRETS['huggingface_token']} STRIPE={SECRETS['stripe_key']}\n"
            f"DATABASE_URL=postgres://admin:{SECRETS['url_password']}@db.internal:5432/app\n"
            f"Authorization token {SECRETS['jwt']} and the API key {DUMMY_KEY}\n")
    for message in data["messages"][1:]:
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "text":
                block["text"] += line
                break
            if block.get("type") == "tool_result" and isinstance(block.get("content"), str):
                block["content"] += line
                break
    out = folder / "traces" / f"{TRACE_ID}.json.gz"
    out.parent.mkdir(parents=True)
    out.write_bytes(gzip.compress(json.dumps(data).encode()))
    # a second trace, for `tune --optimize` (a tune and a held-out split)
    shutil.copy(ROOT / "fixtures" / "traces" / f"{OTHER_ID}.json.gz", out.parent)
    return out


def _gold(folder: Path) -> Path:
    """A one-summary gold set whose summary carries the secrets (what validate-matchers judges)."""
    labels = load_labels(LABELS)
    at = labels.points[0]
    facts = labels.expected(at)
    text = "\n".join(f"      - {f.text}" for f in facts[:3]) + f"\n      - the key is {SECRETS['github_token']}"
    judged = ", ".join(f"{f.id}: [{'kept' if i < 3 else 'lost'}, x]" for i, f in enumerate(facts))
    avoid = ", ".join(f"{a.id}: [absent, x]" for a in labels.avoid if any(s < at for s in a.source))
    gold = folder / "gold"
    gold.mkdir()
    (gold / f"{TRACE_ID}.yaml").write_text(
        f"schema: compaction-eval/gold@1\ntrace: {TRACE_ID}\nlabels: {LABELS}\njudged_by: reader-a\nsplit: tune\n"
        f"summaries:\n  - id: s-{at}\n    point: {at}\n    style: terse\n    text: |\n{text}\n    facts: {{{judged}}}\n    avoid: {{{avoid}}}\n",
        encoding="utf-8")
    return gold


def argv(command: str, tmp: Path) -> list[str]:
    """The command with the loopback model in every model role and a small input."""
    trace = tmp / "traces" / f"{TRACE_ID}.json.gz"
    corpus = ["--traces", str(trace), "--labels", str(LABELS)]
    both = ["--traces", str(tmp / "traces"), "--labels", str(LABELS), str(ROOT / "labels" / f"{OTHER_ID}.yaml")]
    out = ["--out", str(tmp / "out")]
    return {
        "run": ["run", *corpus, "--prompts", str(HANDOFF), "--model", MODEL, "--judge-model", MODEL, "--skip-horizon",
                "--points", f"{TRACE_ID}@31", "-q", *out, "--run", "r"],
        "recall": ["recall", *corpus, "--prompts", str(HANDOFF), "--model", MODEL, "--judge-model", MODEL,
                   "--points", f"{TRACE_ID}@31", "-q", *out, "--run", "r"],
        "replay": ["replay", *corpus, "--prompts", str(HANDOFF), "--model", MODEL, "-q", *out, "--run", "r"],
        "decay": ["decay", *corpus, "--prompts", str(HANDOFF), "--model", MODEL, "--k", "2", "-q", *out, "--run", "r"],
        "probes": ["probes", *corpus, "--prompts", str(HANDOFF), "--model", MODEL, "-q", *out, "--run", "r"],
        "tune": ["tune", str(ROOT / "prompts" / "terse.j2"), "--optimize", "--optimiser", MODEL, "--rounds", "1", *both,
                 "--work-dir", str(tmp / "out" / "work"), "--results", str(tmp / "out" / "run"), "--out", str(tmp / "out" / "t.j2")],
        "validate-matchers": ["validate-matchers", "--gold", str(tmp / "gold"), "--judge-model", MODEL, "--out", str(tmp / "out" / "m.json")],
        "horizon": ["horizon", "--agent-model", MODEL, "--model", MODEL, "--configs", "full", "--worlds", "build-01",
                    "--size", "small", "-q", *out, "--run", "r"],
    }[command]


COMMANDS = ["run", "recall", "replay", "decay", "probes", "tune", "validate-matchers", "horizon"]


def test_the_table_covers_every_command_that_can_call_a_model():
    assert sorted(model_commands(build_parser())) == sorted(COMMANDS)


def test_no_code_runs_inspect_eval_but_through_the_session():
    """`eval_or_interrupt` is the one door to inspect's eval (Ctrl-C kept as an interrupt)."""
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "src").rglob("*.py")
                 if p.name != "session.py" and ("from inspect_ai import eval" in p.read_text() or "inspect_ai.eval(" in p.read_text())]
    assert offenders == []


@pytest.fixture(scope="module")
def server():
    with LoopbackServer(judge_script=echo_judge, keep_bodies=True) as srv:
        yield srv


@pytest.fixture
def loopback(server):
    server.faults.clear()
    yield server
    server.faults.clear()


def _env(server: LoopbackServer, tmp: Path) -> dict[str, str]:
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INSPECT_", "XDG_", "ANTHROPIC_", "COMPACTION_EVAL_"))}
    env.update(HOME=str(home), PYTHONWARNINGS="ignore", INSPECT_DISPLAY="none", ANTHROPIC_BASE_URL=server.url,
               ANTHROPIC_API_KEY=DUMMY_KEY, PYTHONPATH=str(ROOT / "src"))
    return env


def _inputs(tmp: Path) -> None:
    _secret_trace(tmp)
    _gold(tmp)


def written(root: Path) -> dict[Path, bytes]:
    """Every file under `root`, decompressed (gzip) and unpacked (inspect's .eval zip logs)."""
    out: dict[Path, bytes] = {}
    for path in root.rglob("*"):
        if not path.is_file() or path.is_symlink():
            continue
        data = path.read_bytes()
        if path.suffix == ".eval":
            with zipfile.ZipFile(path) as z:
                data += b"".join(z.read(n) for n in z.namelist())
        elif path.suffix == ".gz":
            data += gzip.decompress(data)
        out[path] = data
    return out


@pytest.mark.parametrize("command", COMMANDS)
def test_redact_leaves_no_secret_in_anything_written(command, loopback, tmp_path):
    _inputs(tmp_path)
    mark, sent = len(loopback.requests), len(loopback.bodies)
    proc = subprocess.run([sys.executable, "-m", "compaction_eval.cli.main", *argv(command, tmp_path), "--redact"],
                          capture_output=True, text=True, cwd=tmp_path, env=_env(loopback, tmp_path), timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert len(loopback.requests) > mark, "the command called no model: the check below would prove nothing"
    secrets = [*SECRETS.values(), DUMMY_KEY]
    assert not [s for body in loopback.bodies[sent:] for s in secrets if s in body]  # every request redacted
    # inputs are the user's own files: everything else under tmp_path was written by the run
    files = {p: d for p, d in written(tmp_path).items() if not p.is_relative_to(tmp_path / "traces") and not p.is_relative_to(tmp_path / "gold")}
    assert any(p.is_relative_to(tmp_path / "out") for p in files)
    for path, data in files.items():
        leaked = [s for s in secrets if s.encode() in data]
        assert not leaked, f"{path.relative_to(tmp_path)} holds {leaked}"
    assert not [s for s in secrets if s in proc.stdout + proc.stderr]


@pytest.mark.parametrize("command", ["recall", "decay"])
def test_the_api_key_is_never_written_even_unredacted(command, loopback, tmp_path):
    """Without --redact the trace's other secrets are the user's to keep, but the API key's value
    is replaced in requests, answers (the judge echoes it) and written files."""
    _inputs(tmp_path)
    sent = len(loopback.bodies)
    proc = subprocess.run([sys.executable, "-m", "compaction_eval.cli.main", *argv(command, tmp_path)],
                          capture_output=True, text=True, cwd=tmp_path, env=_env(loopback, tmp_path), timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    files = {p: d for p, d in written(tmp_path).items() if not p.is_relative_to(tmp_path / "traces")}
    assert [p for p, d in files.items() if DUMMY_KEY.encode() in d] == []
    bodies = "".join(loopback.bodies[sent:])
    # the check can fail: unredacted, the trace's other secrets are sent as they are; the key is not
    assert SECRETS["aws_access_key"] in bodies and DUMMY_KEY not in bodies
    if command == "recall":
        results = json.loads((tmp_path / "out" / "r" / "results.json").read_text())
        notes = [f.get("note") or "" for s in results["samples"] for f in s["facts"]]
        assert any("[REDACTED:credential]" in n for n in notes)  # the judge's echo arrived, cleaned


def _wait(condition, proc: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + 300  # a hang fails the test; the event below is what it waits for
    while not condition():
        assert proc.poll() is None, f"the command ended before {what}: {proc.communicate()[1][-1500:]}"
        assert time.monotonic() < deadline, f"no {what} after 300 s"
        time.sleep(0.02)


# A command started from a terminal receives Ctrl-C; one started in the background of a
# non-interactive shell (as a test runner may be) inherits SIGINT ignored, and Python then
# leaves it ignored. The command is run as from a terminal: SIGINT restored, then exec.
AS_IN_A_TERMINAL = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
                    "os.execv(sys.executable, [sys.executable, '-m', 'compaction_eval.cli.main', *sys.argv[1:]])")


@pytest.mark.parametrize("command", COMMANDS)
def test_ctrl_c_during_a_model_call_is_one_line_and_exit_130(command, loopback, tmp_path):
    _inputs(tmp_path)
    loopback.faults.always("hang")  # every request is held: the command is waiting on one at the interrupt
    start = len(loopback.requests)
    proc = subprocess.Popen([sys.executable, "-c", AS_IN_A_TERMINAL, *argv(command, tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=_env(loopback, tmp_path))
    try:
        _wait(lambda: any(r.get("fault") == "hang" for r in loopback.requests[start:]), proc, "a held request")
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    lines = [line for line in err.splitlines() if line.strip()]
    assert proc.returncode == 130, err[-2000:]
    assert lines[-1] == "compaction-eval: error: interrupted" and "Traceback" not in err, err[-2000:]
    # nothing partial: inspect's own logs (kept for `inspect view`) and the work folder aside,
    # no run directory, result file or output was written
    out = tmp_path / "out"
    left = [p.relative_to(out) for p in out.rglob("*") if p.is_file()
            and "logs" not in p.relative_to(out).parts and "work" not in p.relative_to(out).parts] if out.exists() else []
    assert left == [], left


@pytest.mark.parametrize("command", ["recall", "tune"])
def test_judge_and_optimiser_answers_are_journaled(command, loopback, tmp_path):
    """Every paid call goes through the answer journal: with inspect's cache deleted, a rerun
    takes the judge's verdicts (recall) and the optimiser's proposal (tune) from the journal."""
    _inputs(tmp_path)
    env = _env(loopback, tmp_path)
    cache = tmp_path / "home" / ".cache" / "compaction-eval" / "inspect-cache"
    first = len(loopback.served())
    proc = subprocess.run([sys.executable, "-m", "compaction_eval.cli.main", *argv(command, tmp_path)],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    paid = loopback.served()[first:]
    # recall: one compaction and one judge call (one point, one prompt); tune: the optimiser
    assert len(paid) >= (2 if command == "recall" else 1), "no judge or optimiser call was made"
    assert len(list((cache / "compaction-eval-answers").rglob("*.answer"))) == len({r["request"] for r in paid})
    shutil.rmtree(cache / "generate")
    shutil.rmtree(tmp_path / "out")
    mark = len(loopback.served())
    again = subprocess.run([sys.executable, "-m", "compaction_eval.cli.main", *argv(command, tmp_path)],
                           capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    assert again.returncode == 0, again.stderr[-2000:]
    assert loopback.served()[mark:] == []


def _failed_cleanly(proc: subprocess.CompletedProcess, tmp: Path) -> None:
    lines = [line for line in proc.stderr.splitlines() if line.strip() and not line.startswith("  ")]
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert lines[-1].startswith("compaction-eval: error: ") and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    out = tmp / "out"
    left = [p.relative_to(out) for p in out.rglob("*") if p.is_file()
            and "logs" not in p.relative_to(out).parts and "work" not in p.relative_to(out).parts] if out.exists() else []
    assert left == [], left


@pytest.mark.parametrize("command", COMMANDS)
def test_timeout_and_retries_bound_every_command(command, loopback, tmp_path):
    """An endpoint that never answers: every command gives up after --timeout seconds and
    --max-retries retries (decay, probes, tune --optimize and the judge waited on before)."""
    _inputs(tmp_path)
    loopback.faults.always("hang")
    mark = len(loopback.requests)
    proc = subprocess.run([sys.executable, "-m", "compaction_eval.cli.main", *argv(command, tmp_path), "--timeout", "2", "--max-retries", "0"],
                          capture_output=True, text=True, cwd=tmp_path, env=_env(loopback, tmp_path), timeout=600)
    _failed_cleanly(proc, tmp_path)
    asked = [r for r in loopback.requests[mark:] if r["path"] == "/v1/messages"]
    assert asked and all(r.get("fault") == "hang" for r in asked)
    # --max-retries 0: no retry of a request; the run's one retry of a failed sample (recall,
    # run, horizon: inspect's retry_on_error=1) asks it once more
    assert max(Counter(r["request"] for r in asked).values()) <= 2


def test_a_persistent_529_is_retried_a_bounded_number_of_times(loopback, tmp_path):
    _inputs(tmp_path)
    loopback.faults.always("overloaded")
    mark = len(loopback.requests)
    proc = subprocess.run([sys.executable, "-m", "compaction_eval.cli.main", *argv("validate-matchers", tmp_path), "--max-retries", "2"],
                          capture_output=True, text=True, cwd=tmp_path, env=_env(loopback, tmp_path), timeout=600)
    _failed_cleanly(proc, tmp_path)
    assert len([r for r in loopback.requests[mark:] if r.get("status") == 529]) == 3  # one try, two retries


def test_an_answer_past_the_cap_fails_the_run_in_one_line(tmp_path):
    """An endpoint that ignores max_tokens cannot fill memory or a results file."""
    _inputs(tmp_path)
    with LoopbackServer(judge_script=lambda summary, facts: "x" * 1_000_001) as srv:
        proc = subprocess.run([sys.executable, "-m", "compaction_eval.cli.main", *argv("recall", tmp_path), "--max-retries", "0"],
                              capture_output=True, text=True, cwd=tmp_path, env=_env(srv, tmp_path), timeout=600)
    _failed_cleanly(proc, tmp_path)
    assert "more than the cap" in proc.stderr
