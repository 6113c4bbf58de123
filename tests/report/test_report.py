"""The HTML report, checked in headless Chromium (Debian's `chromium`; .ci/run installs it).

One module-scoped pair of real runs (the offline extractive summariser on a real
mini-swe-agent trace with its hand labels, plus a hostile trace full of markup, template
syntax and odd Unicode), one report with the baseline comparison, one browser.

The browser is driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`),
with the standard library only: no browser download, no driver package.
"""

from __future__ import annotations

import base64
import copy
import fcntl
import html.parser
import io
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest
import yaml
from PIL import Image, ImageStat

from compaction_eval.contracts.runfiles import read_results, write_json_atomic
from compaction_eval.contracts.settings import CompactionSettings
from compaction_eval.gate.compare import compare_dirs
from compaction_eval.recall.run import RecallConfig, run_recall
from compaction_eval.report import plots
from compaction_eval.report.drilldown import (
    Mark,
    highlight_summary,
    mark_text,
    source_excerpt,
)
from compaction_eval.report.render import build_context, load_source_corpus, render_html, render_report
from conftest import ROOT, real_trace

# ----------------------------------------------------------------------------- headless Chromium

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--no-default-browser-check", "--disable-default-apps", "--disable-extensions", "--mute-audio",
    "--hide-scrollbars", "--remote-debugging-pipe", "--window-size=1280,900",
]
VIEWPORT = (1280, 900)


def find_chromium() -> str | None:
    for name in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


class Chromium:
    """One headless Chromium spoken to over its DevTools pipe (fd 3 in, fd 4 out)."""

    def __init__(self, binary: str, timeout: float = 30.0):
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="ce-chromium-")
        cmd_r, self._cmd_w = os.pipe()
        self._resp_r, resp_w = os.pipe()
        # copies above fd 10, so that placing them on 3 and 4 in the child cannot clobber them
        child_in = fcntl.fcntl(cmd_r, fcntl.F_DUPFD, 10)
        child_out = fcntl.fcntl(resp_w, fcntl.F_DUPFD, 10)
        os.close(cmd_r)
        os.close(resp_w)

        def place_fds() -> None:
            os.dup2(child_in, 3)
            os.dup2(child_out, 4)

        self.proc = subprocess.Popen(
            [binary, *CHROMIUM_FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            preexec_fn=place_fds, pass_fds=(3, 4), close_fds=True,
        )
        os.close(child_in)
        os.close(child_out)
        self._next = 0
        self._cv = threading.Condition()
        self._answers: dict[int, dict] = {}
        self.events: list[dict] = []
        self._stderr: list[bytes] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self._stderr.extend(self.proc.stderr), daemon=True).start()

    def _read(self) -> None:
        buf = b""
        while chunk := os.read(self._resp_r, 1 << 16):
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                with self._cv:
                    if "id" in msg:
                        self._answers[msg["id"]] = msg
                    else:
                        self.events.append(msg)
                    self._cv.notify_all()

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        with self._cv:
            self._next += 1
            mid = self._next
        msg = {"id": mid, "method": method, "params": params or {}, **({"sessionId": session} if session else {})}
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        with self._cv:
            while mid not in self._answers:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise TimeoutError(f"chromium did not answer {method}: {b''.join(self._stderr)[-1500:]!r}")
                self._cv.wait(0.2)
            answer = self._answers.pop(mid)
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer.get("result", {})

    def _wait_event(self, method: str, session: str, since: int) -> None:
        deadline = time.monotonic() + self.timeout
        with self._cv:
            while not any(e.get("method") == method and e.get("sessionId") == session for e in self.events[since:]):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"chromium: no {method}")
                self._cv.wait(0.2)

    def open(self, url: str) -> Page:
        """A new tab that records console, network and dialog events, loaded with `url`."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session, len(self.events))
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable", session=session)
        width, height = VIEWPORT
        self.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session)
        mark = len(self.events)
        self.send("Page.navigate", {"url": url}, session)
        self._wait_event("Page.loadEventFired", session, mark)
        return page

    def close(self) -> None:
        try:
            self.send("Browser.close")
            self.proc.wait(10)
        except Exception:
            self.proc.kill()
            self.proc.wait(10)
        os.close(self._cmd_w)
        shutil.rmtree(self.profile, ignore_errors=True)


class Page:
    def __init__(self, browser: Chromium, session: str, start: int):
        self.browser, self.session, self.start = browser, session, start

    def events(self, method: str) -> list[dict]:
        return [e for e in self.browser.events[self.start:] if e.get("sessionId") == self.session and e.get("method") == method]

    def console_errors(self) -> list[str]:
        """Console errors and warnings, uncaught exceptions, and browser log errors (CSP too)."""
        out = [
            " ".join(str(a.get("value", a.get("description", ""))) for a in e["params"]["args"])
            for e in self.events("Runtime.consoleAPICalled")
            if e["params"]["type"] in ("error", "assert", "warning")
        ]
        out += [e["params"]["exceptionDetails"].get("text", "") + str(e["params"]["exceptionDetails"].get("exception", ""))
                for e in self.events("Runtime.exceptionThrown")]
        out += [e["params"]["entry"]["text"] for e in self.events("Log.entryAdded") if e["params"]["entry"]["level"] in ("error", "warning")]
        return out

    def requests(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events("Network.requestWillBeSent")]

    def js(self, expression: str):
        r = self.browser.send("Runtime.evaluate", {"expression": expression, "returnByValue": True}, self.session)
        if "exceptionDetails" in r:
            raise AssertionError(f"page script failed: {r['exceptionDetails']}")
        return r["result"].get("value")

    def screenshot(self) -> bytes:
        return base64.b64decode(self.browser.send("Page.captureScreenshot", {"format": "png"}, self.session)["data"])


@pytest.fixture(scope="module")
def browser():
    binary = find_chromium()
    if binary is None:
        pytest.fail("headless Chromium not found: install Debian's `chromium` (apt-get install -y chromium; .ci/run does), "
                    "or set CHROMIUM to its path")
    b = Chromium(binary)
    yield b
    b.close()


# ----------------------------------------------------------------------------- hostile trace

SCRIPT = "<script>alert(1)</script>"
TEXTAREA = "</textarea><img src=x onerror=alert(2)>"
JINJA = "{{ 7*7 }} {% raw %}{{ config }}{% endraw %} {# c #}"
RTL = "\u202egnirts desrever\u202c"
ZERO_WIDTH = "zero\u200bwidth\u200djoiner\ufeff"
EMOJI = "🦀👩\u200d💻🇺🇦"
HOSTILE = [SCRIPT, TEXTAREA, JINJA, RTL, ZERO_WIDTH, EMOJI]
EVIL_ID = 'evil-"trace"-<i>x</i>'
EVIL_POINT = 12


def write_hostile_corpus(root: Path) -> tuple[Path, Path]:
    """A trace whose messages, labels and (extracted) summaries carry markup, template
    syntax and odd Unicode. Messages 1..7 are the summarised span at point 12."""
    traces, labels = root / "traces", root / "labels"
    traces.mkdir()
    labels.mkdir()
    messages = [
        {"role": "user", "content": f"Fix the crash in src/evil_module.py. Quote: {SCRIPT}"},
        {"role": "assistant", "content": [
            {"type": "text", "text": f"The user wrote {SCRIPT} and wants {JINJA} kept literally."},
            {"type": "tool_use", "id": "c1", "name": "bash", "input": {"command": "cat src/evil_module.py"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1",
                                      "content": f"raise ValueError('bad {TEXTAREA} value')\n# {RTL} {ZERO_WIDTH} {EMOJI}\nMAX_ITEMS = 347\n"}]},
        {"role": "assistant", "content": f"The error is ValueError: bad {TEXTAREA} value. MAX_ITEMS is 347."},
        {"role": "user", "content": f"Note {RTL} and {ZERO_WIDTH} and {EMOJI} must survive."},
        {"role": "assistant", "content": "Next I will edit src/evil_module.py to catch the ValueError."},
        {"role": "user", "content": "Also the limit must stay 347."},
        {"role": "assistant", "content": "Understood."},
        *[{"role": r, "content": f"filler {i}"} for i, r in enumerate(["user", "assistant"] * 2)],
    ]
    trace = {"schema": "compaction-eval/trace@1", "id": EVIL_ID, "source": {"kind": "test"}, "system": "", "messages": messages}
    (traces / "evil.json").write_text(json.dumps(trace, ensure_ascii=False), encoding="utf-8")
    lab = {
        "schema": "compaction-eval/labels@1", "trace": EVIL_ID, "labelled_by": "human", "points": [{"at": EVIL_POINT}],
        "facts": [
            {"id": "path", "category": "artifact", "text": f"The bug is in src/evil_module.py; {SCRIPT}",
             "keys": ["src/evil_module.py"], "source": [0, 5]},
            {"id": "bug", "category": "bug", "text": f"ValueError: bad {TEXTAREA} value", "keys": ["ValueError", TEXTAREA],
             "source": [2], "critical": True},
            {"id": "limit", "category": "number", "text": f"MAX_ITEMS is 347; {JINJA}", "keys": ["347"], "source": [1, 2]},
            {"id": "odd-unicode", "category": "artifact", "text": f"Odd text {RTL} {ZERO_WIDTH} {EMOJI}",
             "keys": [EMOJI], "source": [4]},
        ],
    }
    (labels / "evil.yaml").write_text(yaml.safe_dump(lab, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return traces, labels


# ----------------------------------------------------------------------------- real runs


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A candidate (budget 800) and a baseline (budget 250) run on the same corpus: the real
    django__django-11087 trace with its hand labels, and the hostile trace."""
    root = tmp_path_factory.mktemp("report")
    traces, labels = write_hostile_corpus(root)
    common = dict(
        traces=[str(real_trace("django__django-11087")), str(traces)],
        labels=[str(ROOT / "labels" / "real" / "django__django-11087.yaml"), str(labels)],
        prompts=[str(ROOT / "prompts" / f"{p}.j2") for p in ("handoff", "recall_max", "terse")],
    )
    with pytest.MonkeyPatch.context() as mp:  # conftest's isolation is per test; these runs are per module
        mp.setenv("INSPECT_CACHE_DIR", str(root / "inspect-cache"))
        mp.setenv("INSPECT_LOG_DIR", str(root / "inspect-logs"))
        mp.setenv("INSPECT_DISPLAY", "none")
        mp.delenv("ANTHROPIC_API_KEY", raising=False)
        run_recall(RecallConfig(**common, compaction=CompactionSettings(budget=800)), root / "runs" / "cand")
        run_recall(RecallConfig(**common, compaction=CompactionSettings(budget=250)), root / "runs" / "base")
    return root / "runs" / "cand", root / "runs" / "base"


@pytest.fixture(scope="module")
def report(runs) -> Path:
    cand, base = runs
    return render_report(cand, baseline=base, allow_setting_changes=True)  # budgets differ on purpose


@pytest.fixture(scope="module")
def page(browser, report):
    return browser.open(report.as_uri())


@pytest.fixture(scope="module")
def results(runs) -> dict:
    return read_results(runs[0])


def open_sample(page: Page, sample_id: str) -> None:
    page.js(f"(() => {{ const d = document.getElementById({json.dumps(sample_id)}); d.open = true;"
            " d.dispatchEvent(new Event('toggle')); d.querySelectorAll('details').forEach(x => x.open = true); })()")


# ----------------------------------------------------------------------------- the page in a browser


def test_report_loads_from_file_without_errors_or_network(page, report):
    assert report.name == "report.html" and report.parent.name == "cand"
    assert page.console_errors() == []
    assert page.requests() == [report.as_uri()]
    ids = page.js("[...document.querySelectorAll('main > header[id], main > section[id]')].map(e => e.id)")
    assert ids == ["run", "verdict", "comparison", "leaderboard", "frontier", "heatmap", "fixes", "drilldown"]
    # the plot is an inline SVG with text, and only our own script is on the page
    assert page.js("document.querySelectorAll('#frontier svg text').length") > 5
    assert page.js("document.scripts.length") == 1


def test_screenshot_is_not_blank(page, tmp_path_factory):
    png = page.screenshot()
    out = tmp_path_factory.mktemp("screens") / "report-top.png"
    out.write_bytes(png)
    image = Image.open(io.BytesIO(png)).convert("L")
    assert image.size == VIEWPORT
    assert ImageStat.Stat(image).stddev[0] > 20, f"screenshot looks blank: {out}"
    dark = sum(image.histogram()[:128]) / (image.size[0] * image.size[1])
    assert 0.01 < dark < 0.5, f"unexpected ink coverage {dark:.3f}: {out}"


def test_verdict_names_the_best_prompt_with_its_interval_and_losses(page, results):
    best = results["prompts"][0]
    headline = page.js("document.querySelector('#verdict .headline').textContent").split()
    text = " ".join(headline)
    lo, hi = best["recall_ci"]
    assert text.startswith(f"Best prompt: {best['prompt']}, recall {best['recall']:.2f} [{lo:.2f}, {hi:.2f}]")
    lost = [f["category"] for s in results["samples"] if s["prompt"] == best["prompt"] for f in s["facts"] if not f["kept"]]
    if lost:
        assert "loses mostly" in text


def test_offline_stand_in_is_labelled_in_header_and_leaderboard(page, results):
    assert results["offline_stand_in"] is True
    assert page.js("document.querySelector('#run .badge.standin').textContent") == "offline stand-in"
    assert "extractive/default" in page.js("document.querySelector('#leaderboard h2 .badge.standin').textContent")
    assert results["stand_in_note"].lower() in page.js("document.querySelector('#run .standin-note').textContent").lower()


def test_leaderboard_sorts_when_a_header_is_clicked(page, results):
    def column(label: str) -> list:
        return page.js(
            "(() => { const t = document.getElementById('leaderboard-table');"
            f" const i = [...t.tHead.rows[t.tHead.rows.length - 1].cells].findIndex(c => c.textContent.trim() === {json.dumps(label)});"
            " return [...t.tBodies[0].rows].map(r => [r.dataset.prompt, Number(r.cells[i].dataset.v)]); })()"
        )

    def click(label: str) -> None:
        page.js(f"[...document.querySelectorAll('#leaderboard-table th')].find(c => c.textContent.trim() === {json.dumps(label)}).click()")

    assert [p for p, _ in column("#")] == [p["prompt"] for p in results["prompts"]]
    click("precision")
    values = [v for _, v in column("precision")]
    assert values == sorted(values, reverse=True)
    assert sorted(values) == sorted(p["precision"] for p in results["prompts"])
    click("precision")
    assert [v for _, v in column("precision")] == sorted(values)
    click("#")  # back to rank order
    assert [p for p, _ in column("#")] == [p["prompt"] for p in results["prompts"]]


def test_drilldown_shows_every_expected_fact_kept_or_lost_per_prompt(page, results, runs):
    prompts = [p["prompt"] for p in results["prompts"]]
    baseline = read_results(runs[1])  # the page compares with it: each prompt's baseline column follows its own
    sample = next(s for s in results["samples"] if s["trace"] != EVIL_ID)
    sample_id = page.js(
        f"[...document.querySelectorAll('details.sample')].find(d => d.dataset.search === {json.dumps(sample['trace'].lower() + '@' + str(sample['point']))}).id"
    )
    assert page.js(f"document.getElementById('{sample_id}').querySelector('.sample-body').children.length") == 0  # lazy
    open_sample(page, sample_id)
    rows = page.js(
        f"[...document.getElementById('{sample_id}').querySelectorAll('table.facts tbody tr')].map(r =>"
        " [r.querySelector('.fid').firstChild.textContent.trim(), [...r.querySelectorAll('td.v')].map(c => c.textContent.trim()[0])])"
    )
    expected = []
    for f in sample["facts"]:
        marks = []
        for p in prompts:
            for doc in (results, baseline):
                s = next(x for x in doc["samples"] if (x["trace"], x["point"], x["prompt"]) == (sample["trace"], sample["point"], p))
                marks.append("✓" if next(v for v in s["facts"] if v["id"] == f["id"])["kept"] else "✗")
        expected.append([f["id"], marks])
    assert rows == expected
    # fact text and the source excerpt that established it come from the labels and the trace
    assert page.js(f"document.getElementById('{sample_id}').querySelectorAll('.ftext').length") == len(sample["facts"])
    assert page.js(f"document.getElementById('{sample_id}').querySelectorAll('pre.excerpt').length") >= len(sample["facts"])
    # two summaries side by side: the best prompt and its baseline's, switchable
    panes = f"document.getElementById('{sample_id}').querySelectorAll('.pane')"
    assert page.js(f"[...{panes}].map(p => p.querySelector('select').value)") == [prompts[0], f"{prompts[0]} (baseline)"]
    page.js(f"(() => {{ const s = {panes}[1].querySelector('select'); s.value = {json.dumps(prompts[2])}; s.dispatchEvent(new Event('change')); }})()")
    third = next(s for s in results["samples"] if (s["trace"], s["point"], s["prompt"]) == (sample["trace"], sample["point"], prompts[2]))
    shown = page.js(f"{panes}[1].querySelector('pre.summary').textContent")
    assert shown == third["summary"]


def test_hostile_text_renders_inert_and_intact(page, report, results):
    raw = report.read_text(encoding="utf-8")
    assert SCRIPT not in raw and "<img" not in raw and "{{ 7*7 }}" in raw
    sid = page.js("[...document.querySelectorAll('details.sample')].find(d => d.dataset.search.startsWith('evil-')).id")
    open_sample(page, sid)
    # nothing was injected: our one script, no image, no dialog, no error
    assert page.js("document.scripts.length") == 1
    assert page.js("document.querySelectorAll('img, iframe, object, embed').length") == 0
    assert page.events("Page.javascriptDialogOpening") == []
    assert page.console_errors() == []
    # ... and the text is there exactly as written: trace id, fact text, source, summary
    assert page.js(f"document.getElementById('{sid}').querySelector('summary .trace').textContent") == EVIL_ID
    facts = page.js(f"[...document.getElementById('{sid}').querySelectorAll('.ftext')].map(e => e.textContent)")
    assert facts[1] == f"ValueError: bad {TEXTAREA} value" and facts[2] == f"MAX_ITEMS is 347; {JINJA}"
    assert facts[3] == f"Odd text {RTL} {ZERO_WIDTH} {EMOJI}" and facts[0].endswith(SCRIPT)
    sources = page.js(f"[...document.getElementById('{sid}').querySelectorAll('pre.excerpt')].map(e => e.textContent).join('\\n')")
    for s in HOSTILE:
        assert s in sources, s
    best = next(s for s in results["samples"] if s["trace"] == EVIL_ID and s["prompt"] == results["prompts"][0]["prompt"])
    summary = page.js(f"document.getElementById('{sid}').querySelector('.pane pre.summary').textContent")
    assert summary == best["summary"]
    for s in (SCRIPT, TEXTAREA, JINJA, RTL, ZERO_WIDTH, EMOJI):
        assert s in summary, s
    # the evidence of the kept bug fact is marked, around the escaped markup, not inside it
    bug = next(f for f in best["facts"] if f["id"] == "bug")
    assert bug["kept"]
    marked = page.js(f"[...document.getElementById('{sid}').querySelectorAll('.pane mark.ev')].map(m => [m.title, m.textContent])")
    bug_marks = "\n".join(x for t, x in marked if "bug (bug)" in t.split("; "))
    for piece in bug["evidence"].split(" | "):
        assert piece in bug_marks
    assert TEXTAREA in bug_marks


def test_baseline_section_agrees_with_compare_runs(page, runs):
    cmp = compare_dirs(runs[1], runs[0])
    badge = page.js("document.querySelector('#comparison .badge').textContent")
    # the verdict is the gate's own (the runs differ in budget: compared as --allow-setting-changes does)
    from compaction_eval.gate.rules import gate_files

    gate = gate_files(runs[1], runs[0], allow_setting_changes=True)
    assert badge == f"gate: {gate.verdict}"
    assert "settings differ (allowed): budget" in page.js("document.querySelector('#comparison').textContent")
    rows = page.js("[...document.querySelectorAll('#comparison-table tbody tr')].map(r => [r.cells[0].dataset.v, Number(r.cells[3].dataset.v)])")
    assert [(p, round(d, 6)) for p, d in rows] == [(pc.prompt, round(pc.recall.delta, 6)) for pc in cmp.prompts]
    lost = sum(len(pc.lost) for pc in cmp.prompts)
    text = page.js("document.querySelector('#comparison .lists').textContent")
    assert f"{lost} fact(s)" in text or (lost == 0 and "None." in text)


def test_a_paired_comparison_shows_both_runs_the_template_diff_and_signed_deltas(browser, runs, tmp_path):
    """Issue 23, item 6. The budget-250 run as the candidate against the budget-800 run, its
    recall_max paired with the baseline's handoff: the baseline is ahead, so the frontier must
    not say a candidate prompt is ahead of every other; both runs are in the frontier, the heat
    map and the drill-down; the template diff shows what changed; every delta shows its sign."""
    cand, base = runs[1], runs[0]
    out = render_report(cand, baseline=base, out=tmp_path / "paired.html", allow_setting_changes=True,
                        pairs={"recall_max": "handoff"})
    page = browser.open(out.as_uri())
    assert page.console_errors() == []
    assert page.requests() == [out.as_uri()]
    first = page.js("document.querySelector('#comparison-table tbody tr').cells[0].textContent").split()
    assert first[:3] == ["recall_max", "vs", "handoff"]
    diff = page.js("document.querySelector('#comparison pre.diff').textContent")
    assert "--- baseline handoff:" in diff and "+++ candidate recall_max:" in diff
    added = page.js("[...document.querySelectorAll('#comparison pre.diff .add')].map(e => e.textContent)")
    assert added and all(line.startswith("+") for line in added)
    # both runs in the heat map and the frontier
    heat = page.js("[...document.querySelectorAll('#heatmap tbody tr')].map(r => r.cells[0].textContent.trim())")
    assert "handoff (baseline)" in heat and "recall_max" in heat
    lede = page.js("document.querySelector('#frontier .lede').textContent")
    ahead = re.search(r"(\S+(?: \(baseline\))?) is ahead of every other prompt", lede)
    best_base = max(read_results(base)["prompts"], key=lambda p: p["recall"])["recall"]
    best_cand = max(read_results(cand)["prompts"], key=lambda p: p["recall"])["recall"]
    assert best_base > best_cand  # the premise: the baseline is ahead
    assert ahead is None or ahead.group(1).endswith("(baseline)"), lede
    # the drill-down: the baseline's summary beside the candidate's, by default
    sid = page.js("document.querySelector('details.sample').id")
    open_sample(page, sid)
    panes = page.js(f"[...document.getElementById('{sid}').querySelectorAll('.pane select')].map(s => s.value)")
    assert panes[1] == panes[0] + " (baseline)" or panes[1].endswith("(baseline)")
    options = page.js(f"[...document.getElementById('{sid}').querySelector('.pane select').options].map(o => o.value)")
    assert "handoff (baseline)" in options
    # every printed delta carries the sign of its value (a -0.004 never prints as +0.00)
    cells = page.js("[...document.querySelectorAll('#comparison-table td.cat')].filter(c => c.dataset.v !== '')"
                    ".map(c => [Number(c.dataset.v), c.textContent.trim()])")
    assert cells
    for value, text in cells:
        if abs(value) > 1e-9:
            assert text.startswith("-" if value < 0 else "+"), (value, text)
            assert float(text) != 0.0, (value, text)


def test_signed_deltas_keep_their_sign():
    from compaction_eval.report.render import _signed

    assert _signed(-0.004, 2) == "-0.004"
    assert _signed(0.0004) == "+0.0004"
    assert _signed(-1e-15) == "+0.000" and _signed(None) == "–"


def test_a_large_corpus_stays_light_and_loads_fast(browser, results, tmp_path):
    """120 samples x 3 prompts: drill-downs stay collapsed and inert until opened."""
    big = copy.deepcopy(results)
    base = [s for s in results["samples"] if s["trace"] != EVIL_ID]
    big["samples"] = []
    for i in range(120):
        src = base[i % len(base)]
        big["samples"] += [dict(s, trace=f"trace-{i:03d}") for s in base if s["point"] == src["point"]]
    run_dir = tmp_path / "big"
    run_dir.mkdir()
    write_json_atomic(run_dir / "results.json", big)
    started = time.monotonic()
    out = render_report(run_dir)
    render_seconds = time.monotonic() - started
    size = out.stat().st_size
    assert size < 120 * 3 * 12_000, f"{size} bytes for 120 samples"
    page = browser.open(out.as_uri())
    timing = page.js("performance.getEntriesByType('navigation')[0].toJSON()")
    assert page.console_errors() == []
    assert page.js("document.querySelectorAll('details.sample').length") == 120
    assert page.js("document.querySelectorAll('details.sample[open], .sample-body *').length") == 0
    assert timing["loadEventEnd"] < 3000, timing
    assert render_seconds < 20
    # the note says why fact text is missing (no traces/labels for made-up trace ids)
    assert "not found" in page.js("document.querySelector('#drilldown .note').textContent")
    first = page.js("document.querySelector('details.sample').id")
    open_sample(page, first)
    assert page.js(f"document.getElementById('{first}').querySelectorAll('table.facts tbody tr').length") > 0


def test_horizon_section_only_when_horizon_json_exists(browser, runs, tmp_path):
    cand = tmp_path / "cand"
    shutil.copytree(runs[0], cand, ignore=shutil.ignore_patterns("logs", "report.html"))
    plain = render_report(cand, out=tmp_path / "plain.html")
    assert 'id="horizon"' not in plain.read_text(encoding="utf-8")
    horizon = {
        "schema": "compaction-eval/horizon@1", "agent": "scripted/default", "offline_stand_in": True,
        "configs": [
            {"config": "baseline", "completion_rate": 0.25, "completion_ci": [0.05, 0.6], "input_tokens": 98000,
             "samples": [{"world": "w1", "completed": False}, {"world": "w2", "completed": True}]},
            {"config": "full", "completion_rate": 0.75, "completion_ci": [0.4, 0.95], "input_tokens": 61000,
             "samples": [{"world": "w1", "completed": True}, {"world": "w2", "completed": True}]},
        ],
    }
    (cand / "horizon.json").write_text(json.dumps(horizon), encoding="utf-8")
    page = browser.open(render_report(cand).as_uri())
    assert page.console_errors() == []
    assert page.js("[...document.querySelectorAll('main > section[id]')].map(e => e.id)").count("horizon") == 1
    rows = page.js("[...document.querySelectorAll('#horizon-table tbody tr')].map(r => r.textContent.replace(/\\s+/g, ' ').trim())")
    assert rows == ["baseline 0.25 [0.05, 0.60] 98,000 2", "full 0.75 [0.40, 0.95] 61,000 2"]
    assert "offline stand-in agent: scripted/default" in page.js("document.querySelector('#horizon h2').textContent")
    assert page.js("document.querySelectorAll('#horizon svg').length") == 1


# ----------------------------------------------------------------------------- without a browser


class _Ids(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.ids += [v for k, v in attrs if k == "id"]


def test_runs_on_different_corpora_are_not_compared_and_the_page_says_why(runs, tmp_path):
    other = read_results(runs[1])
    other["samples"] = [s for s in other["samples"] if s["trace"] != EVIL_ID]
    (tmp_path / "other").mkdir()
    write_json_atomic(tmp_path / "other" / "results.json", other)
    out = render_report(runs[0], baseline=tmp_path / "other", out=tmp_path / "r.html", allow_setting_changes=True)
    page = out.read_text(encoding="utf-8")
    assert "Not compared: the gate cannot decide on these two runs." in page and "different corpora" in page
    assert "only in candidate: evil-&#34;trace&#34;-&lt;i&gt;x&lt;/i&gt;@12" in page


def test_rendering_is_deterministic_apart_from_the_generation_time(runs, tmp_path):
    a = render_report(runs[0], baseline=runs[1], out=tmp_path / "a.html", allow_setting_changes=True).read_text(encoding="utf-8")
    b = render_report(runs[0], baseline=runs[1], out=tmp_path / "b.html", allow_setting_changes=True).read_text(encoding="utf-8")
    strip = lambda t: re.sub(r"generated [^·]*·", "", t)  # noqa: E731
    assert strip(a) == strip(b)
    parser = _Ids()
    parser.feed(a)
    assert len(parser.ids) == len(set(parser.ids)), "duplicate element ids"
    assert "<metadata>" not in a and "dc:date" not in a


def test_a_directory_without_results_is_refused(tmp_path):
    from compaction_eval.contracts.problems import ContractError

    with pytest.raises(ContractError, match="not a run directory"):
        render_report(tmp_path)


def test_marks_are_added_after_escaping_and_never_inside_entities():
    text = "a < b & c <script>x</script> done"
    out = mark_text(text, [(2, 7, "ev", 'f "1"'), (10, 18, "dist", "d<")])
    assert str(out) == (
        'a <mark class="ev" title="f &#34;1&#34;">&lt; b &amp;</mark> c <mark class="dist" title="d&lt;">'
        "&lt;script&gt;</mark>x&lt;/script&gt; done"
    )
    # overlapping marks split into segments carrying both
    both = str(mark_text("abcdef", [(0, 4, "ev", "x"), (2, 6, "dist", "y")]))
    assert both == '<mark class="ev" title="x">ab</mark><mark class="dist ev" title="x; y">cd</mark><mark class="dist" title="y">ef</mark>'


def test_highlight_finds_scorer_evidence_and_normalised_distortions():
    summary = "- Keep `django/db/models/deletion.py` as is.\n- The limit is about 1,024 “items” now.\n- Done <ok>."
    marks = [
        Mark("Keep `django/db/models/deletion.py` as is. | no such unit", "ev", "path (artifact)"),
        Mark("the limit is about 1024 'items' now.", "dist", "drifted_number"),  # normalised, as the scorer reports it
        Mark("not in the summary at all", "ev", "ghost"),
    ]
    html, cut = highlight_summary(summary, marks)
    assert not cut
    assert '<mark class="ev" title="path (artifact)">Keep `django/db/models/deletion.py` as is.</mark>' in html
    assert '<mark class="dist" title="drifted_number">The limit is about 1,024 “items” now.</mark>' in html
    assert "ghost" not in html and "Done &lt;ok&gt;." in html
    long, cut = highlight_summary("x" * 30_000, [])
    assert cut and len(long) == 20_000


def test_source_excerpt_is_a_window_around_the_first_key():
    message = "noise " * 200 + "the file src/app.py <b>broke</b> " + "tail " * 200
    excerpt = str(source_excerpt(message, ["src/app.py"]))
    assert excerpt.startswith("…") and excerpt.endswith("…")
    assert '<mark class="key" title="key: src/app.py">src/app.py</mark> &lt;b&gt;broke&lt;/b&gt;' in excerpt
    assert len(excerpt) < 1200


def test_build_context_without_a_corpus_still_renders(results):
    html_text = render_html(build_context(results))
    assert 'id="drilldown"' in html_text and 'id="comparison"' not in html_text


def test_a_horizon_only_run_and_missing_optional_keys_render(results, tmp_path):
    """A run directory with only horizon.json (keys DESIGN.md 5 fixes, nothing more), and a
    results.json without the optional run metadata."""
    (tmp_path / "h").mkdir()
    (tmp_path / "h" / "horizon.json").write_text(json.dumps(
        {"schema": "compaction-eval/horizon@1", "configs": [{"config": "full", "completion_rate": 0.5, "samples": []}]}
    ), encoding="utf-8")
    page = render_report(tmp_path / "h").read_text(encoding="utf-8")
    parser = _Ids()
    parser.feed(page)
    assert [i for i in ("run", "horizon", "leaderboard") if i in parser.ids] == ["run", "horizon"]
    assert "0.50" in page and "offline stand-in" not in page

    bare = {k: v for k, v in results.items() if k not in ("created", "git_commit", "config", "corpus", "stand_in_note", "run")}
    (tmp_path / "r").mkdir()
    write_json_atomic(tmp_path / "r" / "results.json", bare)
    page = render_report(tmp_path / "r").read_text(encoding="utf-8")
    assert 'id="leaderboard"' in page and "Best prompt:" in page


# ----------------------------------------------------------------------------- long horizon in full, matcher trust

HORIZON_WORLDS = ["audit-01", "query-01"]


@pytest.fixture(scope="module")
def horizon_run(tmp_path_factory) -> dict:
    """A real long-horizon run on two worlds with the three ablation arms (scripted agent)."""
    from compaction_eval.horizon.runner import HorizonConfig, run_horizon

    root = tmp_path_factory.mktemp("horizon")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("INSPECT_CACHE_DIR", str(root / "inspect-cache"))
        mp.setenv("INSPECT_LOG_DIR", str(root / "inspect-logs"))
        mp.setenv("INSPECT_DISPLAY", "none")
        mp.delenv("ANTHROPIC_API_KEY", raising=False)
        return run_horizon(HorizonConfig(configs=["baseline", "full", "baseline-mutated"], worlds=HORIZON_WORLDS,
                                         prompts_dir=str(ROOT / "prompts"), display="none"), root / "h")


def _matchers_json() -> dict:
    """A validate-matchers result (the shape `validate` writes) with known κ values."""
    from compaction_eval.validation.matchers import agreement

    gold = [True, True, False, True, False, True]
    pred = [True, False, False, True, False, True]
    cat = {"intent": agreement(gold, pred), "number": agreement(gold, gold)}
    table = {"overall": agreement(gold * 2, pred + gold), "by_category": cat,
             "by_split": {"not_tune": agreement(gold, pred)}, "heldout_by_category": {"intent": agreement(gold[:4], pred[:4])}}
    from compaction_eval.validation.headline import part_table

    # (trace, category, style, source, gold, predicted, keys-only predicted), the headline's rows
    rows = [(f"t{i % 3}", ("intent", "number", "attempt")[i % 3], ("terse", "drifted")[i % 2], "openhands",
             g, p, True) for i, (g, p) in enumerate(zip(gold * 3, pred * 2 + gold, strict=True))]
    headline = {"status": "measured", "test": part_table(rows, resamples=50), "tune_cross_validated": part_table(rows[:9], 50)}
    return {"schema": "compaction-eval/matcher-validation@1", "gold": {"traces": 2, "fact_judgments": 12, "heldout_traces": ["t2"]},
            "model": None, "facts": {"default": table, "literal": {"overall": agreement(gold, pred)}}, "headline": headline}


def test_full_horizon_section_draws_every_part_and_its_numbers_equal_the_json(browser, runs, horizon_run, tmp_path):
    cand = tmp_path / "cand"
    shutil.copytree(runs[0], cand, ignore=shutil.ignore_patterns("logs", "report.html"))
    (cand / "horizon.json").write_text(json.dumps(horizon_run), encoding="utf-8")
    matchers = _matchers_json()
    (cand / "matchers.json").write_text(json.dumps(matchers), encoding="utf-8")
    page = browser.open(render_report(cand).as_uri())
    assert page.console_errors() == []
    ids = page.js("[...document.querySelectorAll('#horizon [id]')].map(e => e.id)")
    for part in ("horizon-standin", "horizon-steps", "horizon-cost", "horizon-runtime", "horizon-ablation"):
        assert part in ids
    assert "matchers" in page.js("[...document.querySelectorAll('main > section[id]')].map(e => e.id)")
    assert page.js("document.querySelectorAll('#horizon svg').length") == 4  # completion, per step, cumulative, cost
    assert "extractive stand-in summariser" in page.js("document.getElementById('horizon-standin').textContent")

    cells = page.js("[...document.querySelectorAll('#horizon-cost-table tbody tr')].map(r => [r.cells[0].textContent.trim(),"
                    " Object.fromEntries([...r.querySelectorAll('td[data-k]')].map(c => [c.dataset.k, [c.dataset.v, c.textContent.trim()]]))])")
    by_name = {c["config"]: c for c in horizon_run["configs"]}
    assert [name for name, _ in cells] == list(by_name)
    for name, row in cells:
        parts = by_name[name]["cost_breakdown"]
        for k, v in parts.items():
            assert float(row[k][0]) == pytest.approx(v, abs=1e-12) and row[k][1] == f"${v:,.3f}"
        assert float(row["total"][0]) == pytest.approx(by_name[name]["cost_usd"], rel=1e-9)
    assert by_name["full"]["cost_breakdown"]["compaction"] > 0 and by_name["baseline"]["cost_breakdown"]["compaction"] == 0

    hits = page.js("[...document.querySelectorAll('#horizon-runtime-table td[data-k=cache_hit_rate]')].map(c => +c.dataset.v)")
    assert hits == pytest.approx([c["cache_hit_rate"] for c in horizon_run["configs"]]) and all(0 <= h <= 1 for h in hits)
    ablation = page.js("[...document.querySelectorAll('#horizon-ablation-table td[data-k=cost_usd]')].map(c => +c.dataset.v)")
    assert ablation == pytest.approx([r["cost_usd"] for r in horizon_run["ablation"]["rows"]])

    # the matchers section leads with the out-of-sample headline (the test part), not the in-sample fit
    kappas = page.js("[...document.querySelectorAll('#matchers-table td[data-k=kappa]')].map(c => c.textContent.trim())")
    test = matchers["headline"]["test"]
    shown = [a["kappa"] for a in test["by_category"].values()] + [test["kappa"]]
    assert None in shown  # a one-class category: shown as a dash, not as 0
    assert kappas == ["–" if k is None else f"{k:.2f}" for k in shown]
    lede = page.js("document.getElementById('matchers-headline').textContent")
    low, high = test["kappa_ci"]
    assert f"κ {test['kappa']:.2f} [{low:.2f}, {high:.2f}]" in " ".join(lede.split())
    assert f"κ {test['keys_kappa']:.2f}" in lede and "never saw" in lede
    styles = page.js("[...document.querySelectorAll('#matchers-by-style tbody tr td:first-child')].map(c => c.textContent)")
    assert styles == list(test["by_style"])


def test_without_a_test_part_the_matchers_section_shows_the_last_blind_round_as_measured(browser, runs, tmp_path):
    cand = tmp_path / "cand"
    shutil.copytree(runs[0], cand, ignore=shutil.ignore_patterns("logs", "report.html"))
    matchers = _matchers_json()
    h = matchers["headline"]
    test = h["test"]
    h.update(test=None, status="no test part yet")
    summary = {k: test[k] for k in ("n", "traces", "kappa", "kappa_ci", "keys_kappa")}
    h["blind_rounds"] = [{"round": 4, "split": "round4", "frozen_at": "ef8c704", **summary, "n": 1170, "kappa": 0.799},
                         {"round": 5, "split": "round5", "frozen_at": "<b>31b9d4d</b>", **summary}]
    h["last_blind_round"] = {**h["blind_rounds"][1], "test": test, "gold_n": test["n"] + 1, "stale": True}
    (cand / "matchers.json").write_text(json.dumps(matchers), encoding="utf-8")
    page = browser.open(render_report(cand).as_uri())
    assert page.console_errors() == []
    lede = " ".join(page.js("document.getElementById('matchers-headline').textContent").split())
    low, high = test["kappa_ci"]
    assert "last blind round (round 5, matcher frozen at <b>31b9d4d</b>)" in lede  # untrusted text stays text
    assert page.js("document.querySelectorAll('#matchers-headline b').length") == 0
    assert f"κ {test['kappa']:.2f} [{low:.2f}, {high:.2f}]" in lede
    note = " ".join(page.js("document.getElementById('matchers-round-note').textContent").split())
    assert "split: round5" in note and "no out-of-sample figure of its own" in note
    assert f"counts {test['n']} judgments, the gold set now has {test['n'] + 1}" in note  # a stale record is named
    rounds = page.js("[...document.querySelectorAll('#matchers-rounds tbody tr')].map(r => r.cells[0].textContent + ' ' + r.cells[4].textContent)")
    assert rounds == ["4 0.80", f"5 {test['kappa']:.2f}"]


def test_per_step_tokens_add_up_to_the_input_sent_and_old_files_get_the_same_cost_split(horizon_run):
    from compaction_eval.report.render import _cost_parts, _step_curves

    for c in horizon_run["configs"]:
        for s in c["samples"]:
            assert len(s["step_tokens"]) == s["steps"]
        _, cumulative = _step_curves([c])
        # offline, every input token is uncached or simulated cache: the curve ends at the input sent
        assert cumulative[0][1][-1] == c["input_tokens"]
        old = {k: v for k, v in c.items() if k != "cost_breakdown"}  # a horizon.json written before cost_breakdown
        assert sum(_cost_parts(old, horizon_run["cost_model"]).values()) == pytest.approx(c["cost_usd"], rel=1e-9)
    base, full = (next(c for c in horizon_run["configs"] if c["config"] == n) for n in ("baseline", "full"))
    assert max(max(s["step_tokens"]) for s in full["samples"]) <= full["samples"][0]["window"]
    assert base["input_tokens"] > full["input_tokens"]


# ----------------------------------------------------------------------------- issue 14 part 6


def test_leaderboard_columns_are_grouped_and_named_in_full(page):
    heads = page.js("[...document.getElementById('leaderboard-table').tHead.rows].map(r => [...r.cells].map(c => c.textContent.trim()))")
    groups, names = heads
    assert "recall by fact category" in groups and "what went wrong" in groups
    assert {"constraints", "decisions", "critical facts lost", "precision", "compression"} <= set(names)
    assert not {"con", "dec", "crit. lost", "prec.", "compr."} & set(names)


def test_why_a_fact_was_lost_is_on_the_page_not_only_in_a_tooltip(page, results):
    lost = next((s, v) for s in results["samples"] for v in s["facts"] if not v["kept"] and v.get("note"))
    sample, verdict = lost
    sample_id = page.js(
        f"[...document.querySelectorAll('details.sample')].find(d => d.dataset.search === {json.dumps(sample['trace'].lower() + '@' + str(sample['point']))}).id"
    )
    open_sample(page, sample_id)
    shown = page.js(f"[...document.getElementById('{sample_id}').querySelectorAll('td.v.lost .why')]"
                    ".filter(e => e.offsetHeight > 0).map(e => e.textContent)")
    assert verdict["note"] in shown


def test_report_and_results_have_normal_file_modes(report, runs):
    mask = os.umask(0)
    os.umask(mask)
    assert report.stat().st_mode & 0o777 == 0o666 & ~mask
    assert (runs[0] / "results.json").stat().st_mode & 0o777 == 0o666 & ~mask


def test_completion_dots_at_0_and_1_are_not_clipped():
    svg = plots.interval_svg([("none", 0.0, (0.0, 0.0)), ("all", 1.0, (1.0, 1.0))], xlabel="completion", salt="t", title="t")
    import re as _re

    dots = _re.findall(r'<g( clip-path="[^"]*")?>\s*<use [^>]*style="fill: ' + _re.escape(plots.ACCENT.lower()), svg.lower())
    assert len(dots) == 2 and dots == ["", ""]  # both dots drawn whole: no clip path on them


def test_a_run_made_with_relative_paths_renders_its_excerpts_from_another_directory(tmp_path, monkeypatch):
    project = tmp_path / "project"
    project.mkdir()
    write_hostile_corpus(project)
    monkeypatch.chdir(project)
    run_recall(RecallConfig(traces=["traces"], labels=["labels"], prompts=[str(ROOT / "prompts" / "handoff.j2")]), Path("out/r"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    results = read_results(project / "out" / "r")
    assert all(Path(p).is_absolute() for p in results["config"]["traces"])
    assert results["inputs_as_given"]["traces"] == ["traces"]
    corpus = load_source_corpus(results, project / "out" / "r")
    assert corpus.missing is None and EVIL_ID in corpus.traces and EVIL_ID in corpus.labels
