"""Family `build`: find why the nightly build broke.

Answer: the failing test (early: the first test run), the exact error code (mid: the CI
log), and the file and line that raise it (late: a grep, which needs the code to pick the
right one of several `raise ConfigError(...)` sites).
"""

from __future__ import annotations

import re

from compaction_eval.horizon.worlds.content import WORDS, code_file, log_lines, rng_for
from compaction_eval.horizon.worlds.model import PlanStep, World

SYSTEM = (
    "You are a careful software engineer working in a read-only workspace. Investigate with the "
    "tools, then call submit(answer) once with the final answer."
)
FORMAT = "RESULT test=<test> file=<file> code=<code>"
CONSTRAINT = "Do not modify anything under tests/."
PACKAGES = ["ingest", "billing", "scheduler", "gateway", "exporter", "notifier"]


def make(index: int, size: str, lines: int, window: int) -> World:
    wid = f"build-{index + 1:02d}"
    rng = rng_for(wid)
    pkg = PACKAGES[index % len(PACKAGES)]
    names = rng.sample(WORDS, 4 + index)
    modules = [f"src/{pkg}/{n}.py" for n in names]
    root = modules[rng.randrange(1, len(modules))]
    codes = rng.sample(range(1000, 9999), len(modules))
    code = f"E{codes[modules.index(root)]}"

    files: dict[str, str] = {}
    root_line = 0
    for path, c in zip(modules, codes, strict=True):
        line = rng.randrange(lines // 3, lines - 3)
        if path == root:
            root_line = line
        files[path] = code_file(rng, lines, {line: f'        raise ConfigError("E{c}", "missing {rng.choice(WORDS)} setting")'})
    test_files = [f"tests/test_{n}.py" for n in names]
    for t in test_files:
        files[t] = code_file(rng, max(20, lines // 4))
    failing = f"{test_files[modules.index(root)]}::test_{rng.choice(WORDS)}_{rng.choice(WORDS)}"
    files["ci/nightly.log"] = log_lines(
        rng, lines, {lines // 2: f"02:14:07 ERROR [build] ConfigError code={code} raised while loading settings for {failing}"}
    )

    results = []
    for n in range(lines):
        t = rng.choice(test_files)
        results.append(f"{t}::test_{rng.choice(WORDS)}_{n} PASSED [{100 * n // lines:3d}%]")
    results.insert(rng.randrange(len(results) // 4, len(results) // 2), f"{failing} FAILED")
    tests_output = "\n".join(
        results + ["", f"___ {failing} ___", "E   ConfigError: configuration invalid (details in ci/nightly.log)",
                   f"=== 1 failed, {lines} passed ==="]
    )

    reads = [m for m in modules if m != root]
    half = max(1, len(reads) // 2)
    plan = [
        PlanStep("run_tests", {}, ("test",), r"FAILED"),
        PlanStep("list_dir", {"path": f"src/{pkg}"}),
        *[PlanStep("read_file", {"path": p}) for p in reads[:half]],
        PlanStep("read_file", {"path": "ci/nightly.log"}, ("code",), r"ERROR \[build\]"),
        *[PlanStep("read_file", {"path": p}) for p in reads[half:]],
        PlanStep("grep", {"pattern": "raise ConfigError", "path": "src/"}, ("file",), r":\d+:\s+raise ConfigError"),
        PlanStep("read_file", {"path": root}),
    ]
    request = (
        f"The nightly build of the `{pkg}` service broke last night. Find the failing test, the exact "
        "error code it fails with, and the root cause: the file and line that raise that error.\n"
        f"Constraint: {CONSTRAINT} The workspace is read-only for you.\n"
        f"Answer format (one line, exactly): {FORMAT}\n"
        "where <file> is path:line. Submit it with the submit tool."
    )
    return World(
        id=wid, family="build", size=size, context_window=window, system=SYSTEM, request=request,
        files=files, plan=plan, tests_output=tests_output,
        expected={"test": failing, "file": f"{root}:{root_line}", "code": code},
        answer_format=FORMAT, constraint=CONSTRAINT, extract=extract,
        planted={"test": "early", "code": "mid", "file": "late"},
    )


def extract(text: str, request_visible: bool) -> dict[str, str | None]:
    """Fields visible in `text`: the file needs the code (it picks the matching raise)."""
    test = re.search(r"(tests/[\w/]+\.py::\w+) FAILED", text)
    code = re.search(r"ERROR \[build\] ConfigError code=(E\d{4})", text)
    found: dict[str, str | None] = {"test": test.group(1) if test else None, "code": code.group(1) if code else None}
    found["file"] = None
    if code:
        raise_site = re.search(rf"(src/[\w/]+\.py):(\d+):\s+raise ConfigError\(\"{code.group(1)}\"", text)
        found["file"] = f"{raise_site.group(1)}:{raise_site.group(2)}" if raise_site else None
    else:
        # Without the code the agent cannot tell which raise site matters: the field is unknown.
        found["file"] = None
    return found
