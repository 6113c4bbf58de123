"""Family `audit`: find every call to a deprecated function and report paths and count.

The matches are spread over one grep per directory along the plan (early, mid and late);
the request excludes vendored code, a constraint the agent can only honour while it sees it.
"""

from __future__ import annotations

import re

from compaction_eval.horizon.worlds.content import WORDS, code_file, rng_for
from compaction_eval.horizon.worlds.model import PlanStep, World

SYSTEM = (
    "You are a code auditor working in a read-only checkout. Investigate with the tools, then "
    "call submit(answer) once with the final answer."
)
FORMAT = "AUDIT count=<count> paths=<paths>"
CONSTRAINT = "Ignore vendored third-party code under src/vendor/."
CALL = "legacy_fetch("


def make(index: int, size: str, lines: int, window: int) -> World:
    wid = f"audit-{index + 1:02d}"
    rng = rng_for(wid)
    dirs = rng.sample([w for w in WORDS if w != "vendor"], 4 + index)
    dirs.insert(len(dirs) // 2, "vendor")
    files: dict[str, str] = {}
    per_file = max(30, lines // 2)
    for d in dirs:
        for name in rng.sample(WORDS, 3):
            # The modern call is everywhere: a grep for "fetch" returns pages of it.
            planted = {n: f"    resp = fetch_v2(session, retries={rng.randrange(1, 5)})" for n in range(4, per_file, 6)}
            for _ in range(rng.choice([0, 1, 1, 2])):
                planted[rng.randrange(2, per_file)] = f"    data = {CALL}url, timeout={rng.randrange(5, 60)})"
            # Decoys a careless match would count: a comment and a similarly named function.
            planted[rng.randrange(2, per_file)] = "    # legacy_fetch is deprecated: use fetch_v2"
            planted[rng.randrange(2, per_file)] = "    rows = legacy_fetcher(cursor)"
            files[f"src/{d}/{name}.py"] = code_file(rng, per_file, planted)

    sites = [(p, i) for p, text in files.items() for i, line in enumerate(text.splitlines()) if CALL in line]
    kept = [p for p, _ in sites if not p.startswith("src/vendor/")]
    plan = [PlanStep("list_dir", {"path": "src"})] + [
        PlanStep("grep", {"pattern": "fetch", "path": f"src/{d}"}, (f"dir:{d}",), rf"legacy_fetch\(|matches in src/{d}/")
        for d in dirs
    ]
    planted_at = {}
    for n, d in enumerate(dirs):
        planted_at[f"dir:{d}"] = "early" if n < len(dirs) / 3 else ("mid" if n < 2 * len(dirs) / 3 else "late")
    request = (
        f"Audit this repository for calls to the deprecated `{CALL[:-1]}()` under src/: report every file "
        "that calls it and the total number of call sites.\n"
        f"Constraint: {CONSTRAINT}\n"
        f"Answer format (one line, exactly): {FORMAT}\n"
        "where <paths> is the sorted, comma-separated list of files (no spaces). Submit it with the submit tool."
    )
    return World(
        id=wid, family="audit", size=size, context_window=window, system=SYSTEM, request=request,
        files=files, plan=plan,
        expected={"count": str(len(kept)), "paths": ",".join(sorted(set(kept)))},
        answer_format=FORMAT, constraint=CONSTRAINT, extract=_extractor(dirs),
        planted={"count": "early+mid+late", "paths": "early+mid+late", **planted_at},
    )


def _extractor(dirs: list[str]):
    def extract(text: str, request_visible: bool) -> dict[str, str | None]:
        # The exclusion is the request's: an agent that no longer sees it counts vendored code.
        excluded = {"vendor"} if request_visible else set()
        found: dict[str, str | None] = {}
        complete = True
        for d in dirs:
            # The grep's trailer tells that the directory was scanned (and is still in view).
            m = re.search(rf"grep: (\d+) matches in src/{d}/", text)
            found[f"dir:{d}"] = m.group(1) if m else None
            complete = complete and m is not None
        sites = {
            (p, line) for p, line in re.findall(r"(src/[\w/]+\.py):(\d+):\s+data = legacy_fetch\(", text)
            if p.split("/")[1] not in excluded
        }
        paths = {p for p, _ in sites}
        found["count"] = str(len(sites)) if complete else None
        found["paths"] = ",".join(sorted(paths)) if complete else None
        return found

    return extract
