"""The recall suite through `--model anthropic/claude-test`, over HTTP, against the loopback
server: the real `anthropic` SDK and inspect's provider, with and without faults, killed
mid-run and resumed, and a dummy key that must appear in no output."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from compaction_eval.loopback import Fault, LoopbackServer
from conftest import ROOT

DUMMY_KEY = "sk-ant-DUMMY-KEY-0123456789"
SAMPLES = 2 * 2  # one trace with 2 points x 2 prompts
SMALL = [
    "--traces", str(ROOT / "fixtures" / "traces" / "synth-dep-upgrade-001.json.gz"),
    "--labels", str(ROOT / "labels" / "synth-dep-upgrade-001.yaml"),
    "--prompts", str(ROOT / "prompts" / "handoff.j2"), str(ROOT / "prompts" / "terse.j2"),
    "--model", "anthropic/claude-test", "--shape", "messages", "--display", "none",
]


@pytest.fixture(scope="module")
def server():
    srv = LoopbackServer().start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def loopback(server):
    server.faults.clear()
    yield server
    server.faults.clear()


def _env(server: LoopbackServer, cwd: Path) -> dict[str, str]:
    home = cwd / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INSPECT_", "XDG_", "ANTHROPIC_"))}
    env.update(
        HOME=str(home), PYTHONWARNINGS="ignore", INSPECT_DISPLAY="none",
        ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY=DUMMY_KEY,
    )
    return env


def recall(server: LoopbackServer, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "compaction_eval.cli.main", "recall", *SMALL, "--out", str(cwd / "results"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=_env(server, cwd), timeout=300)


def served_since(server: LoopbackServer, seq: int) -> list[dict]:
    return [r for r in server.served() if r["seq"] >= seq]


def assert_no_key_anywhere(root: Path, *texts: str) -> None:
    for text in texts:
        assert DUMMY_KEY not in text
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            if path.suffix == ".eval":  # a zip: look inside every member too
                import zipfile

                with zipfile.ZipFile(path) as z:
                    data += b"".join(z.read(n) for n in z.namelist())
            assert DUMMY_KEY.encode() not in data, f"key leaked into {path}"


def sample_keys(run_dir: Path) -> list[tuple]:
    results = json.loads((run_dir / "results.json").read_text())
    return sorted((s["trace"], s["point"], s["prompt"], s["epoch"]) for s in results["samples"])


def test_recall_runs_over_http_and_a_rerun_costs_nothing(loopback, tmp_path):
    start = len(loopback.requests)
    proc = recall(loopback, tmp_path, "--run", "r1")
    assert proc.returncode == 0, proc.stderr
    first = served_since(loopback, start)
    assert len(first) == SAMPLES
    # one request per sample, all through the SDK with a key, none from the SDK's own retries
    assert len({r["request"] for r in first}) == SAMPLES and all(r["key_sent"] for r in first)
    results = json.loads((tmp_path / "results" / "r1" / "results.json").read_text())
    assert results["model"] == "anthropic/claude-test" and results["offline_stand_in"] is False
    assert len(results["samples"]) == SAMPLES
    # the prompt cache model reported writes and (the second prompt on the same span) reads
    assert sum(s["cache_write_tokens"] for s in results["samples"]) > 0
    assert any(s["summary"] for s in results["samples"])

    mark = len(loopback.requests)
    again = recall(loopback, tmp_path, "--run", "r2")
    assert again.returncode == 0, again.stderr
    assert served_since(loopback, mark) == []  # everything from the generate cache
    assert sample_keys(tmp_path / "results" / "r2") == sample_keys(tmp_path / "results" / "r1")

    # Model arguments are part of the cache scope: a different one is a different question
    # (inspect's own key drops `batch`, so only -M can make these calls). --batch reaches
    # the provider's batch mode: the requests arrive in one message batch.
    mark = len(loopback.requests)
    scoped = recall(loopback, tmp_path, "--run", "r3", "--batch", "-M", "streaming=true")
    assert scoped.returncode == 0, scoped.stderr
    calls = served_since(loopback, mark)
    assert len(calls) == SAMPLES and {r["path"] for r in calls} == {"batch"} and len({r["batch"] for r in calls}) == 1
    assert_no_key_anywhere(tmp_path, proc.stdout, proc.stderr, again.stdout, again.stderr, scoped.stderr)


def test_transient_faults_are_retried_to_completion(loopback, tmp_path):
    for kind in ("rate_limit", "overloaded", "server_error", "drop", "malformed"):
        loopback.faults.push(kind)
    loopback.faults.push(Fault("slow", delay=6.0))
    start = len(loopback.requests)
    proc = recall(loopback, tmp_path, "--run", "faulty", "--timeout", "3", "--max-retries", "8")
    assert proc.returncode == 0, proc.stderr
    seen = [r.get("fault") for r in loopback.requests[start:] if r["path"] == "/v1/messages"]
    assert {"rate_limit", "overloaded", "server_error", "drop", "malformed", "slow"} <= set(seen)
    results = json.loads((tmp_path / "results" / "faulty" / "results.json").read_text())
    assert len(results["samples"]) == SAMPLES
    assert_no_key_anywhere(tmp_path, proc.stdout, proc.stderr)


def test_persistent_faults_fail_clearly_and_leave_nothing(loopback, tmp_path):
    loopback.faults.always(Fault("overloaded"))
    proc = recall(loopback, tmp_path, "--run", "down", "--max-retries", "1", "--timeout", "5")
    assert proc.returncode == 1
    errors = [line for line in proc.stderr.splitlines() if line.startswith("compaction-eval: error:")]
    assert len(errors) == 1 and "Overloaded" in errors[0], proc.stderr
    assert "Traceback" not in proc.stderr
    results = tmp_path / "results"
    assert not (results / "down").exists() and list(results.glob(".down.*")) == []
    assert_no_key_anywhere(tmp_path, proc.stdout, proc.stderr)


def test_killed_run_resumes_without_losing_duplicating_or_repaying(loopback, tmp_path):
    # One answer gets through, the other requests are held unanswered: kill there.
    loopback.faults.after(1, "hang")
    start = len(loopback.requests)
    cmd = [sys.executable, "-m", "compaction_eval.cli.main", "recall", *SMALL, "--out", str(tmp_path / "results"), "--run", "k"]
    with open(tmp_path / "killed.err", "w") as err:
        proc = subprocess.Popen(cmd, cwd=tmp_path, env=_env(loopback, tmp_path), stdout=subprocess.DEVNULL, stderr=err)
        try:
            # killed once the answer is in the journal (observed on disk), not after a delay
            wait_for(lambda: len(journal_entries(tmp_path / "home")) == 1, proc, "the first answer in the journal")
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
    paid_first = {r["request"] for r in served_since(loopback, start)}
    assert len(paid_first) == 1
    assert not (tmp_path / "results" / "k").exists()
    assert list((tmp_path / "results").glob(".k.*.partial")), "the killed run left no staging directory"

    loopback.faults.clear()
    mark = len(loopback.requests)
    rerun = recall(loopback, tmp_path, "--run", "k")
    assert rerun.returncode == 0, rerun.stderr
    assert "resuming k" in rerun.stderr
    paid_second = [r["request"] for r in served_since(loopback, mark)]
    assert len(paid_second) == SAMPLES - 1 and not (set(paid_second) & paid_first)  # none paid twice
    keys = sample_keys(tmp_path / "results" / "k")
    assert len(keys) == SAMPLES == len(set(keys))  # none lost, none duplicated
    assert list((tmp_path / "results").glob(".k.*")) == []
    assert_no_key_anywhere(tmp_path, rerun.stdout, rerun.stderr, (tmp_path / "killed.err").read_text())


# A kill -9 must not lose an answer that has arrived: the answer journal writes each one the
# moment the provider returns it, before the harness acts on it. The test kills at a point it
# observes, never after a delay (a guarantee stated in time failed on a loaded machine): the
# last request is held unanswered by the server, so the run cannot finish first, and the kill
# comes once every answer that went out is in the journal on disk.


def journal_entries(home: Path) -> list[Path]:
    """The committed answer-journal entries under the user cache directory of HOME."""
    root = home / ".cache" / "compaction-eval" / "inspect-cache" / "compaction-eval-answers"
    return sorted(root.rglob("*.answer")) if root.is_dir() else []


def wait_for(condition, proc: subprocess.Popen, what: str) -> None:
    """Until `condition()` holds; the run ending first, or 300 s (a hang), fails the test."""
    deadline = time.monotonic() + 300
    while not condition():
        assert proc.poll() is None, f"the run ended before {what}"
        assert time.monotonic() < deadline, f"no {what} after 300 s"
        time.sleep(0.01)


def test_kill_9_after_answers_arrived_loses_none_of_them(loopback, tmp_path):
    cmd = [sys.executable, "-m", "compaction_eval.cli.main", "recall", *SMALL, "--out", str(tmp_path / "results"), "--run", "k9"]
    loopback.faults.after(SAMPLES - 1, "hang")  # the last request is held: the run is still going at the kill
    start = len(loopback.requests)
    with open(tmp_path / "killed.err", "w") as err:
        proc = subprocess.Popen(cmd, cwd=tmp_path, env=_env(loopback, tmp_path), stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True)
        try:
            held = lambda: any(r.get("fault") == "hang" for r in loopback.requests[start:])  # noqa: E731
            wait_for(lambda: held() and len(served_since(loopback, start)) == SAMPLES - 1, proc, "the answers and the held request")
            wait_for(lambda: len(journal_entries(tmp_path / "home")) == SAMPLES - 1, proc, "every answer in the journal")
            assert proc.poll() is None
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    arrived = {r["request"] for r in served_since(loopback, start)}
    assert len(arrived) == SAMPLES - 1
    assert not (tmp_path / "results" / "k9").exists(), "the run finished before the kill"

    loopback.faults.clear()
    mark = len(loopback.requests)
    rerun = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=_env(loopback, tmp_path), timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    asked = [r["request"] for r in served_since(loopback, mark)]
    assert not arrived & set(asked), f"{len(arrived & set(asked))} of {len(arrived)} journaled answers were paid for again"
    assert len(asked) == 1  # only the question that was held unanswered
    keys = sample_keys(tmp_path / "results" / "k9")
    assert len(keys) == SAMPLES == len(set(keys))
    assert_no_key_anywhere(tmp_path, rerun.stdout, rerun.stderr, (tmp_path / "killed.err").read_text())


def test_redact_keeps_secrets_from_the_model(loopback, tmp_path):
    import gzip

    trace = ROOT / "fixtures" / "traces" / "synth-ci-broken-001.json.gz"
    secret = "sk-live-b1278c92258d24987638f1962aa941eb"  # printed by a CI step in the trace
    assert secret in gzip.decompress(trace.read_bytes()).decode()
    loopback.keep_bodies, loopback.bodies[:] = True, []
    try:
        cmd = [sys.executable, "-m", "compaction_eval.cli.main", "recall", "--traces", str(trace),
               "--labels", str(ROOT / "labels" / "synth-ci-broken-001.yaml"), "--prompts", str(ROOT / "prompts" / "recall_max.j2"),
               "--model", "anthropic/claude-test", "--display", "none", "--redact", "--out", str(tmp_path / "results"), "--run", "red"]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=_env(loopback, tmp_path), timeout=300)
        assert proc.returncode == 0, proc.stderr
        sent = [b for b in loopback.bodies if '"messages"' in b]
        assert sent and all(secret not in b for b in sent)
        assert any("[REDACTED:openai_key]" in b for b in sent)
    finally:
        loopback.keep_bodies = False
    results = json.loads((tmp_path / "results" / "red" / "results.json").read_text())
    assert results["redactions"]["avoid_items_removed"] == ["synth-ci-broken-001:ci-secret"]
    for path in (tmp_path / "results").rglob("*"):
        assert not path.is_file() or secret.encode() not in path.read_bytes()


def test_horizon_suite_runs_over_http_through_faults(loopback, tmp_path):
    # Agent and compactor both through the anthropic provider: the loopback answers the
    # agent's requests with the scripted agent and the compactor's with the summariser.
    loopback.faults.push("rate_limit").push("overloaded")
    start = len(loopback.requests)
    cmd = [sys.executable, "-m", "compaction_eval.cli.main", "horizon", "--agent-model", "anthropic/claude-test",
           "--model", "anthropic/claude-test", "--worlds", "build-01", "--configs", "full",
           "--prompts-dir", str(ROOT / "prompts"), "--out", str(tmp_path / "results"), "--run", "h", "--display", "none"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=_env(loopback, tmp_path), timeout=600)
    assert proc.returncode == 0, proc.stderr
    calls = loopback.requests[start:]
    assert {"rate_limit", "overloaded"} <= {r.get("fault") for r in calls}
    assert any(r.get("status") == 200 and r.get("path") == "/v1/messages" for r in calls)
    horizon = json.loads((tmp_path / "results" / "h" / "horizon.json").read_text())
    assert horizon["agent"] == "anthropic/claude-test" and horizon["configs"][0]["samples"]
    assert_no_key_anywhere(tmp_path, proc.stdout, proc.stderr)


HORIZON = ["--agent-model", "anthropic/claude-test", "--model", "anthropic/claude-test", "--worlds", "build-01",
           "--configs", "full", "--prompts-dir", str(ROOT / "prompts"), "--display", "none"]


def test_killed_horizon_run_resumes_without_repaying(loopback, tmp_path):
    """The agent loop is sequential: kill it after a few answered steps, rerun, and the
    steps already paid for come from the generate cache; the world still completes once."""
    cmd = [sys.executable, "-m", "compaction_eval.cli.main", "horizon", *HORIZON, "--out", str(tmp_path / "results"), "--run", "hk"]
    loopback.faults.after(3, "hang")
    start = len(loopback.requests)
    with open(tmp_path / "killed.err", "w") as err:
        proc = subprocess.Popen(cmd, cwd=tmp_path, env=_env(loopback, tmp_path), stdout=subprocess.DEVNULL, stderr=err)
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and len(served_since(loopback, start)) < 3:
                time.sleep(0.2)
            time.sleep(1.0)  # let the last answered call reach the generate cache
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
    paid_first = {r["request"] for r in served_since(loopback, start)}
    assert len(paid_first) == 3
    assert not (tmp_path / "results" / "hk").exists()

    loopback.faults.clear()
    mark = len(loopback.requests)
    rerun = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=_env(loopback, tmp_path), timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    assert "resuming hk" in rerun.stderr
    paid_second = [r["request"] for r in served_since(loopback, mark)]
    assert paid_second and not (set(paid_second) & paid_first)  # none paid twice
    horizon = json.loads((tmp_path / "results" / "hk" / "horizon.json").read_text())
    [config] = horizon["configs"]
    assert [s["world"] for s in config["samples"]] == ["build-01"]  # none lost, none duplicated
    assert list((tmp_path / "results").glob(".hk.*")) == []
    # and a rerun with nothing changed makes no model calls at all
    mark = len(loopback.requests)
    again = subprocess.run([*cmd[:-1], "hk2"], capture_output=True, text=True, cwd=tmp_path, env=_env(loopback, tmp_path), timeout=600)
    assert again.returncode == 0, again.stderr
    assert served_since(loopback, mark) == []
    assert_no_key_anywhere(tmp_path, rerun.stdout, rerun.stderr, again.stdout, again.stderr, (tmp_path / "killed.err").read_text())


def _poison_generate_cache(cache: Path, marker: Path) -> int:
    """Replace every generate-cache entry under `cache` with a pickle that runs code when
    loaded (`os.mkdir(marker)`), and drop the answer journal: what a hostile checkout commits."""
    import pickle
    import shutil

    class Evil:
        def __reduce__(self):
            return os.mkdir, (str(marker),)

    entries = [p for p in (cache / "generate").rglob("*") if p.is_file()]
    for entry in entries:
        entry.write_bytes(pickle.dumps((None, Evil())))
    shutil.rmtree(cache / "compaction-eval-answers", ignore_errors=True)
    return len(entries)


def test_a_generate_cache_committed_in_the_work_tree_is_never_loaded(loopback, tmp_path):
    # The checkout commits inspect cache entries where the cache used to live
    # (./.compaction-eval/inspect-cache), at the keys this very run asks for.
    proj, marker = tmp_path / "proj", tmp_path / "code-ran"
    subprocess.run(["git", "init", "-q", str(proj)], check=True)
    env = _env(loopback, tmp_path)  # HOME (and so the user cache directory) outside the checkout
    committed = proj / ".compaction-eval" / "inspect-cache"
    cmd = [sys.executable, "-m", "compaction_eval.cli.main", "recall", *SMALL, "--out", str(proj / "results")]
    asked = {**env, "COMPACTION_EVAL_CACHE_DIR": str(proj / ".compaction-eval")}  # the user names it: allowed
    first = subprocess.run([*cmd, "--run", "a"], capture_output=True, text=True, cwd=proj, env=asked, timeout=300)
    assert first.returncode == 0, first.stderr
    assert _poison_generate_cache(committed, marker) == SAMPLES

    mark = len(loopback.requests)
    plain = subprocess.run([*cmd, "--run", "b"], capture_output=True, text=True, cwd=proj, env=env, timeout=300)
    assert plain.returncode == 0, plain.stderr
    assert not marker.exists(), "a pickle committed in the work tree ran code"
    assert len(served_since(loopback, mark)) == SAMPLES  # asked again: the checkout's answers are not used
    assert (tmp_path / "home" / ".cache" / "compaction-eval" / "inspect-cache" / "generate").is_dir()

    # Even where the user asks for that directory, an entry builds data only: refused, named, asked again.
    mark = len(loopback.requests)
    named = subprocess.run([*cmd, "--run", "c"], capture_output=True, text=True, cwd=proj, env=asked, timeout=300)
    assert named.returncode == 0, named.stderr
    assert not marker.exists(), "a pickle in a named cache directory ran code"
    assert "ignored a generate-cache entry" in named.stderr and "is not data: refused" in named.stderr
    assert len(served_since(loopback, mark)) == SAMPLES


def test_a_cache_inside_a_work_tree_is_refused_unless_named(loopback, tmp_path):
    proj = tmp_path / "proj"
    subprocess.run(["git", "init", "-q", str(proj)], check=True)
    env = {**_env(loopback, tmp_path), "INSPECT_CACHE_DIR": str(proj / "cache")}
    cmd = [sys.executable, "-m", "compaction_eval.cli.main", "recall", *SMALL, "--out", str(proj / "results"), "--run", "x"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=proj, env=env, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert f"{proj / 'cache'}: model cache is inside the git work tree {proj}" in proc.stderr
    assert not (proj / "results" / "x").exists()
