"""Regenerate `fixtures/real/` from the shared data folder: the real corpus the project ships.

    python -m compaction_eval.corpus.importers.ship [--data DIR] [--out DIR]

Every real trace file of the data folder (see its README.md) is converted with the importers
and written as `<out>/<source>/<trace id>.json.gz`; `<source>` is one of mini-swe-agent,
claude-code, gemini-cli, openhands, swe-agent, aider, codex-cli, crush, cursor, copilot (a Claude
Code session exported by SpecStory goes to claude-code). Each trace gets the facts a user of the
corpus needs: `source` {kind (the importer), corpus (data folder), repository, commit, path
(the file's path in that repository), license}, `metadata` {agent, model, task_kind,
user_prompts}. Beside the traces go each upstream folder's SOURCE.md and license file
(named `SOURCE-<folder>.md` etc. where a source has several upstream folders) and a README.md
table. Files that are not traces (results_summary.json, the READMEs) are not converted. Sessions
too small to label (an `/init` session, a 4-message session) are left out by id
(`Upstream.skip`); the shipped SOURCE file says which and why in a section added at its end.

The output is deterministic: JSON with sorted keys, gzip with mtime 0 and no file name, files
in sorted order; files of an earlier run that this one does not write are removed. Defaults: --data from $COMPACTION_EVAL_DATA, else the first `shared/data`
beside the repository or one of its parents; --out `fixtures/real` of the repository.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compaction_eval.contracts.problems import ContractError, Problem
from compaction_eval.contracts.traces import parse_json_text, validate_trace
from compaction_eval.corpus.importers import convert_all
from compaction_eval.corpus.redact import redact_trace

SOURCES = ("mini-swe-agent", "claude-code", "gemini-cli", "openhands", "swe-agent", "aider", "codex-cli", "crush", "cursor",
           "copilot")

# Task kinds of the interactive sessions, by file (from their user prompts).
CLAUDE_TASKS = {
    "21037e11-89de-484d-abba-8705254aa991.jsonl": "network",
    "343e3472-b9b6-4561-ade0-21d1a4730c11.jsonl": "sysadmin",
    "3af9b1a7-6512-4883-ad18-320658ced099.jsonl": "security",
    "43391f62-680a-4688-9dd8-3637467d6b23.jsonl": "repo-maintenance",
    "554b9fa6-f719-40e8-ba70-beee69bd60b5.jsonl": "greenfield-project",
    "abc757d1-3da3-42fb-bb7b-ffa293a4ba29.jsonl": "repo-maintenance",
    "agent-abc3cb6.jsonl": "repo-maintenance",
    "c76e5be5-ffd2-4901-a935-885527c83a61.jsonl": "network",
    "d8126fa6-87d4-443d-ba41-0dbf2faecb65.jsonl": "greenfield-project",
    "ff59cfd2-09dc-4a18-8c9f-0d46c3d4e8cd.jsonl": "network",
}
GEMINI_TASKS = {
    "session-2025-12-24T21-37-2ccb51c5.json": "sysadmin",
    "session-2025-12-25T12-25-301d6774.json": "sysadmin",
    "session-2025-12-25T21-07-7ee43789.json": "sysadmin",
    "session-2025-12-28T03-31-4eb0784d.json": "sysadmin",
    "session-2025-12-30T18-12-d5169a00.json": "sysadmin",
    "session-2026-01-01T01-15-376d5da4.json": "network",
    "session-2026-01-01T03-48-e0af73a9.json": "sysadmin",
    "session-2026-01-01T06-42-b1fc1c13.json": "repo-maintenance",
    "session-2026-01-01T22-31-dfbafc17.json": "repo-maintenance",
    "session-2026-01-02T02-34-9330d511.json": "sysadmin",
    "session-2026-01-10T01-55-ac6d3016.json": "repo-maintenance",
    "session-2026-01-11T00-25-17b4d5e9.json": "network",
}
UNKNOWN = "unknown"
README_TITLE = "# Real traces (fixtures/real)"


def _models(trace: dict[str, Any]) -> str:
    names = sorted(m for m in trace["metadata"].get("models", {}) if m != "<synthetic>")
    return " / ".join(names) or UNKNOWN


def _codex_path(name: str) -> str:
    """`rollout-2025-10-31T19-02-58-<uuid>.jsonl` lives in `.codex/sessions/2025/10/31/`."""
    year, month, day = name.removeprefix("rollout-")[:10].split("-")
    return f".codex/sessions/{year}/{month}/{day}/{name}"


# The Cursor export names with Polish letters were transliterated in the data folder.
CURSOR_NAMES = {
    "2025-07-24_21-10Z-sprawdzenie-statusu-pamieci.md": "2025-07-24_21-10Z-sprawdzenie-statusu-pamięci.md",
    "2025-07-25_08-37Z-przenies-zawartosc-pliku-do-dokumentacji.md": "2025-07-25_08-37Z-przenieś-zawartość-pliku-do-dokumentacji.md",
    "2025-07-25_10-16Z-przejdz-do-nastepnego-zadania.md": "2025-07-25_10-16Z-przejdź-do-następnego-zadania.md",
    "2025-07-25_14-01Z-sprawdzenie-dzialania-narzedzi-mcp-rag.md": "2025-07-25_14-01Z-sprawdzenie-działania-narzędzi-mcp-rag.md",
}


@dataclass(frozen=True)
class Upstream:
    """One upstream folder of the data folder and what every trace of it shares.

    Args:
        folder: the folder in the data folder (`claude-code/m-claude`).
        source: the fixtures/real subfolder.
        pattern: glob of its trace files.
        repository, commit: where the files come from (commit: the snapshot, None if unknown).
        upstream_path: file name -> its path in the repository.
        license: short license name; license_note: a caveat, if any.
        copies: files of the folder shipped beside the traces (SOURCE.md, license).
        agent, model, task_kind: str, or trace -> str (from the trace or its file name).
        user_prompts: used when the importer does not count them.
        readme_section: where the folder has no SOURCE.md: the heading of its section in the
            data folder's README.md, written out as its SOURCE file.
        skip: trace id -> why it is not shipped (a session too small to label).
    """

    folder: str
    source: str
    pattern: str
    repository: str
    commit: str | None
    upstream_path: Callable[[str], str]
    license: str
    copies: tuple[str, ...]
    agent: str | Callable[[dict[str, Any]], str]
    model: str | Callable[[dict[str, Any]], str]
    task_kind: str | Callable[[dict[str, Any]], str]
    user_prompts: int | None = None
    license_note: str | None = None
    readme_section: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    skip: dict[str, str] = field(default_factory=dict)


def _value(spec: str | Callable[[dict[str, Any]], str], trace: dict[str, Any]) -> str:
    return spec(trace) if callable(spec) else spec


ADP = "https://github.com/zhu-yiqi/agent-data-protocol"
ADP_COMMIT = "df5b5adc3b61adbe0a0cc250d56a781cbffc867e"
UPSTREAMS = (
    Upstream("mini-swe-agent", "mini-swe-agent", "*.traj.json", "https://github.com/gruckion/mini-swe-agent", None,
             lambda name: f"swebench_results/20251118_gemini-3-pro-74pct/trajs/{name}", "MIT", ("LICENSE.md",),
             agent=lambda t: f"mini-swe-agent {t['metadata'].get('mini_version', '')}".strip(),
             model="gemini-3-pro-preview", task_kind="swe-bench", user_prompts=1,
             license_note="MIT license of the repository; no separate license is stated for the trajectories",
             readme_section="## mini-swe-agent/"),
    Upstream("claude-code/m-claude", "claude-code", "*.jsonl", "https://github.com/M-Thisness/M-Claude",
             "5a8d89ee3677906aec18f7beb518a5a08e72a002", lambda name: f"Archives/{name}", "CC0-1.0",
             ("SOURCE.md", "LICENSE.upstream"),
             agent=lambda t: f"Claude Code {t['metadata'].get('version', '')}".strip(), model=_models,
             task_kind=lambda t: CLAUDE_TASKS.get(t["source"]["path"], UNKNOWN)),
    Upstream("claude-code/session-share", "claude-code", "*.jsonl", "https://github.com/moredip/session-share",
             "c82245286829af5cfe9b535885ed158f34c296b8",
             lambda name: f"session-viewer/test/INTEGRATION/fixtures/{name}", "MIT", ("SOURCE.md", "LICENSE.upstream"),
             agent=lambda t: f"Claude Code {t['metadata'].get('version', '')}".strip(), model=_models,
             task_kind="plugin-dev"),
    Upstream("gemini-cli/m-gemini", "gemini-cli", "*.json", "https://github.com/mischa-thisness/M-Gemini",
             "3bad8d462ef0a93165eb373a44f09a77910e5ecd", lambda name: f"Archives/{name}", "CC0-1.0",
             ("SOURCE.md", "LICENSE.upstream"), agent="Gemini CLI", model=_models,
             task_kind=lambda t: GEMINI_TASKS.get(t["source"]["path"], UNKNOWN)),
    Upstream("openhands/multiswebench-llama4", "openhands", "*.jsonl", "https://github.com/OpenHands/OpenHands",
             "d6fab190bfb55f07cc380993b45ec4f781706a92",
             lambda name: f"evaluation/benchmarks/multi_swe_bench/examples/{name}", "MIT",
             ("SOURCE.md", "LICENSE.upstream"), agent="OpenHands CodeActAgent",
             model=lambda t: t["metadata"].get("model", UNKNOWN), task_kind="multi-swe-bench"),
    Upstream("openhands/swe-gym-openhands", "openhands", "*.json", ADP, None,
             lambda name: f"datasets/SWE-Gym_OpenHands-Sampled-Trajectories/{name}", "MIT", (),
             agent="OpenHands CodeActAgent", model="gpt-4o", task_kind="swe-gym", user_prompts=1,
             license_note="MIT per the ADP README; the upstream dataset's license was not verified",
             readme_section="## openhands/swe-gym-openhands/"),
    Upstream("openhands/sweplay", "openhands", "*.json", ADP, ADP_COMMIT,
             lambda name: f"datasets/swe-play-trajectories/{name}", "MIT",
             ("SOURCE.md", "ADP_README.md", "DATASET_README.md"), agent="OpenHands (text function calling)",
             model=UNKNOWN, task_kind="greenfield-project", user_prompts=1,
             license_note="MIT per the ADP README; the upstream dataset StephenZhu/SWE-Play-trajectories "
                          "license was not verified"),
    Upstream("swe-agent/swesmith-claude", "swe-agent", "*.json", ADP, ADP_COMMIT,
             lambda name: f"datasets/swe-smith/{name}", "MIT", ("SOURCE.md", "ADP_README.md"), agent="SWE-agent",
             model=lambda t: t["metadata"].get("sample_info", {}).get("model", UNKNOWN), task_kind="swe-smith",
             user_prompts=1,
             license_note="MIT per the ADP README; the upstream dataset's license card was not verified"),
    Upstream("aider/friendly-names", "aider", ".aider.llm.history", "https://github.com/jkassemi/friendly_names",
             "33ef87a9021de5c22b97abc6f7346ac4da45b3a9", lambda name: name, "MIT", ("SOURCE.md", "LICENSE.upstream"),
             agent="aider (architect/editor)", model=UNKNOWN, task_kind="package-dev"),
    Upstream("claude-code/munsellspace-specstory", "claude-code", "*.md", "https://github.com/ChrisGVE/MunsellSpace",
             "3e2479bec91a4b7e4d9b988275118e6ede268492", lambda name: f".specstory/history/{name}", "MIT",
             ("SOURCE.md", "LICENSE.upstream"), agent="Claude Code (SpecStory markdown export)", model=_models,
             task_kind="planning-docs", license_note="MIT at the commit used; the repository is Apache-2.0 at HEAD"),
    Upstream("codex-cli/cpolar-connect", "codex-cli", "*.jsonl", "https://github.com/Hoper-J/cpolar-connect",
             "70b17db1db0ced357f7e0c50bf24bb786147b8e2", _codex_path, "MIT", ("SOURCE.md", "LICENSE.upstream"),
             agent=lambda t: f"Codex CLI {t['metadata'].get('cli_version', '')}".strip(), model=_models, task_kind="package-dev"),
    Upstream("codex-cli/moonmind", "codex-cli", "*.jsonl", "https://github.com/MoonLadderStudios/MoonMind",
             "786ef1a51cec0d27635ee1d3e8b7114da78ed4da", _codex_path, "MIT", ("SOURCE.md", "LICENSE.upstream"),
             agent=lambda t: f"Codex CLI {t['metadata'].get('cli_version', '')}".strip(), model=_models, task_kind="spec-design",
             license_note="MIT at the commit used; the repository is Apache-2.0 at HEAD"),
    Upstream("codex-cli/openprintkit", "codex-cli", "*.jsonl", "https://github.com/Monotoba/OpenPrintKit",
             "d4cae3f4f7de0bbbf14a6d8e88546163be18789d", _codex_path, "MIT", ("SOURCE.md", "LICENSE.upstream"),
             agent=lambda t: f"Codex CLI {t['metadata'].get('cli_version', '')}".strip(), model=_models, task_kind="package-dev"),
    Upstream("crush/dbos-transact-golang", "crush", "crush.db", "https://github.com/dbos-inc/dbos-transact-golang",
             "38c4ff7fda4c4ad43de12681238753bb69a6bd90", lambda name: f".crush/{name}", "MIT", ("SOURCE.md", "LICENSE.upstream"),
             agent="Crush", model=_models, task_kind="library-dev",
             skip={"f306c145-4c83-492c-b575-739c30bbced4": "4 messages (one prompt, one file read, one answer): nothing to compact"}),
    Upstream("crush/dbr", "crush", "crush.db", "https://github.com/rnwolf/dbr", "37e2b3485d2e853a8363a9bb11372b1eda79a129",
             lambda name: f".crush/{name}", "MIT", ("SOURCE.md", "LICENSE.upstream"), agent="Crush", model=_models,
             task_kind="backend-dev",
             skip={"call_15c3877e300e486883f29b84": "a sub-agent run of 6 messages (~1k tokens, one lookup): nothing to compact; "
                                                    "its answer is in the parent session's tool result"}),
    Upstream("crush/quay", "crush", "crush.db", "https://github.com/jbpratt/quay", "3ac4428e78b4873aacc5ff0c4f094c4a56f54653",
             lambda name: f".crush/{name}", "Apache-2.0", ("SOURCE.md", "LICENSE.upstream"), agent="Crush", model=_models,
             task_kind="bug-fix",
             skip={"17c2d974-eab7-4a44-83d2-97c5186a5789": "Crush's built-in /init prompt only (13 messages, ~4k tokens), "
                                                           "stopped before its last call returned: no user intent to keep"}),
    Upstream("cursor/mcp-rag-server-specstory", "cursor", "*.md", "https://github.com/design4pro/mcp-rag-server",
             "7798379c2c452452e2b173cc8b0e55c83e39c287", lambda name: f".specstory/history/{CURSOR_NAMES.get(name, name)}",
             "MIT", ("SOURCE.md", "LICENSE.upstream"), agent="Cursor agent (SpecStory markdown export)", model=UNKNOWN,
             task_kind="greenfield-project"),
    Upstream("copilot/tree-sitter-languages-rs-specstory", "copilot", "*.md", "https://github.com/DakineMI/tree-sitter-languages-rs",
             "8e6f3dd86cb33e5a0019d17179745730d3886dd7", lambda name: f".specstory/history/{name}", "MIT",
             ("SOURCE.md", "LICENSE.upstream"), agent="GitHub Copilot agent mode, VS Code (SpecStory markdown export)",
             model=_models, task_kind="build-packaging"),
)
# Files at a source's top level in the data folder, shipped as they are.
TOP_LEVEL_COPIES = {"openhands": ("ADP_README.md",)}


def trace_files(data: Path, up: Upstream) -> list[Path]:
    return sorted(p for p in (data / up.folder).glob(up.pattern) if p.is_file() and not p.name.startswith(("SOURCE", "README")))


def _resolved(data: Path) -> dict[str, bool]:
    summary = data / "mini-swe-agent" / "results_summary.json"
    if not summary.exists():
        return {}
    doc = parse_json_text(summary.read_text(encoding="utf-8"), str(summary))
    return {i["instance_id"]: bool(i.get("resolved")) for i in doc.get("instances", []) if "instance_id" in i}


def ship_trace(trace: dict[str, Any], up: Upstream, path: Path, resolved: dict[str, bool]) -> dict[str, Any]:
    """The trace with the corpus facts in `source` and `metadata`."""
    meta = dict(trace["metadata"])
    # from the trace as imported (its source.path is the file name)
    meta["agent"] = _value(up.agent, trace)
    meta["model"] = _value(up.model, trace)
    meta["task_kind"] = _value(up.task_kind, trace)
    src = dict(trace["source"])
    src.pop("path", None)  # the file name; replaced by the path in the repository
    source: dict[str, Any] = {"kind": src.pop("kind"), "corpus": up.folder, "repository": up.repository}
    if up.commit:
        source["commit"] = up.commit
    source["path"] = up.upstream_path(path.name)
    source["license"] = up.license
    if up.license_note:
        source["license_note"] = up.license_note
    source.update(src)  # sample / line of a multi-trace file
    trace = {**trace, "source": source}
    if "user_prompts" not in meta:
        if up.user_prompts is None:
            raise ValueError(f"{path}: the importer counts no user prompts and {up.folder} sets none")
        meta["user_prompts"] = up.user_prompts
    if up.source == "mini-swe-agent" and trace["id"] in resolved:
        meta["resolved"] = resolved[trace["id"]]
    trace["metadata"] = meta
    return redact_trace(trace)


def encode(trace: dict[str, Any]) -> bytes:
    """Deterministic bytes of one trace file: sorted-key JSON, gzip without time or name."""
    text = json.dumps(trace, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n"
    return gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)


def _skipped_section(up: Upstream) -> str:
    lines = ["", "## Not shipped in fixtures/real (added by the ship script)", "",
             "Every session of the store is imported by `compaction-eval import`; these are not shipped, being too "
             "small to label:", ""]
    lines += [f"- `{tid}`: {why}" for tid, why in sorted(up.skip.items())]
    return "\n".join(lines) + "\n"


def _readme_section(data: Path, heading: str) -> str:
    lines = (data / "README.md").read_text(encoding="utf-8").splitlines()
    start = lines.index(heading)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    body = "\n".join(lines[start:end]).strip()
    return (f"# Source: {heading.removeprefix('## ').rstrip('/')}\n\n"
            "(The data folder has no SOURCE.md for this source; this is its section of the data folder's README.md.)\n\n"
            f"{body}\n")


def build(data: Path, out: Path) -> dict[str, Any]:
    """Write the corpus to `out` (rebuilt from scratch). Returns a summary per upstream folder."""
    data, out = Path(data), Path(out)
    resolved = _resolved(data)
    files: dict[Path, bytes] = {}
    rows: list[dict[str, Any]] = []
    for up in UPSTREAMS:
        several = sum(1 for u in UPSTREAMS if u.source == up.source) > 1
        sub = up.folder.split("/")[-1]

        def named(name: str, several: bool = several, sub: str = sub) -> str:
            if not several:
                return name
            stem, dot, ext = name.partition(".")
            return f"{stem}-{sub}{dot}{ext}"

        traces = []
        for path in trace_files(data, up):
            for trace in convert_all(path):
                if trace["id"] in up.skip:
                    continue
                shipped = ship_trace(trace, up, path, resolved)
                problems = validate_trace(shipped, str(path))
                if problems:
                    raise ContractError(problems)
                target = out / up.source / f"{shipped['id']}.json.gz"
                if target in files:
                    raise ContractError([Problem(str(path), "id", f"trace id {shipped['id']!r} is already "
                                                                  f"written to fixtures/real/{up.source}")])
                files[target] = encode(shipped)
                traces.append(shipped)
        for name in up.copies:
            files[out / up.source / named(name)] = (data / up.folder / name).read_bytes()
            if name == "SOURCE.md" and up.skip:
                files[out / up.source / named(name)] += _skipped_section(up).encode("utf-8")
        if up.readme_section:
            files[out / up.source / named("SOURCE.md")] = _readme_section(data, up.readme_section).encode("utf-8")
        rows.append({
            "source": up.source, "folder": up.folder, "traces": len(traces),
            "messages": sum(len(t["messages"]) for t in traces),
            "agents": sorted({t["metadata"]["agent"] for t in traces}),
            "models": sorted({t["metadata"]["model"] for t in traces}),
            "task_kinds": sorted({t["metadata"]["task_kind"] for t in traces}),
            "license": up.license + (" (see note)" if up.license_note else ""),
            "user_prompts": sum(t["metadata"]["user_prompts"] for t in traces),
        })
    for source, names in TOP_LEVEL_COPIES.items():
        for name in names:
            files[out / source / name] = (data / source / name).read_bytes()
    files[out / "README.md"] = _readme(rows).encode("utf-8")
    _write(out, files)
    return {"files": len(files), "rows": rows}


def _write(out: Path, files: dict[Path, bytes]) -> None:
    """Write `files`; remove what else is under `out`, but only in a directory this wrote."""
    readme = out / "README.md"
    if out.exists() and any(out.iterdir()) and not (readme.exists() and readme.read_text(encoding="utf-8").startswith(README_TITLE)):
        raise ContractError([Problem(str(out), "", "exists and is not a fixtures/real folder (no README.md of ours); "
                                                   "refusing to overwrite")])
    if out.exists():
        for old in sorted(out.rglob("*"), reverse=True):
            if old.is_file() and old not in files:
                old.unlink()
            elif old.is_dir() and not any(old.iterdir()):
                old.rmdir()
    for target in sorted(files):
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(files[target])


def _readme(rows: list[dict[str, Any]]) -> str:
    lines = [
        README_TITLE,
        "",
        "Real agent sessions, not written by this project, converted to `compaction-eval/trace@1` by the",
        "importers and shipped so that the real corpus runs without the data folder they came from.",
        "Each subfolder holds `<trace id>.json.gz` files and, beside them, the upstream SOURCE file(s) and",
        "license(s) (`-<folder>` in the name where a source has several upstream folders). Every trace",
        "names its origin in `source` (repository, commit, path, license) and carries `metadata.agent`,",
        "`metadata.model`, `metadata.task_kind` and `metadata.user_prompts`; importer notes (left-out",
        "events, skipped lines, repaired tool pairs) are in its metadata too.",
        "",
        "Regenerate (deterministic; a test checks the committed files against it when the data exists):",
        "",
        "    python -m compaction_eval.corpus.importers.ship --data <shared data folder>",
        "",
        "| source | upstream folder | agent | model | task kind | license | traces | messages | user prompts |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['source']} | {r['folder']} | {', '.join(r['agents'])} | {', '.join(r['models'])} | "
                     f"{', '.join(r['task_kinds'])} | {r['license']} | {r['traces']} | {r['messages']} | "
                     f"{r['user_prompts']} |")
    total = sum(r["traces"] for r in rows)
    lines += [(f"| **total** | | | | | | **{total}** | {sum(r['messages'] for r in rows)} | "
               f"{sum(r['user_prompts'] for r in rows)} |"), "",
              "License notes: the ADP samples (openhands/swe-gym-openhands, openhands/sweplay,",
              "swe-agent/swesmith-claude) are MIT per the Agent Data Protocol README, which adds that",
              "individual datasets may have their own licenses; those were not verified (see each",
              "trace's `source.license_note` and the SOURCE files). mini-swe-agent: the repository's MIT",
              "license; no separate license is stated for the trajectories. crush/quay is Apache-2.0; codex-cli/moonmind",
              "and claude-code/munsellspace-specstory were MIT at the commit used and are Apache-2.0 at HEAD.",
              "The SpecStory sources (cursor, copilot, claude-code/munsellspace-specstory) are markdown exports, not the",
              "agents' own logs: each trace's `metadata.left_out` says what the export does not keep.", ""]
    return "\n".join(lines)


def repo_root() -> Path:
    """The repository holding this module (the first parent with a pyproject.toml)."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").exists():
            return parent
    raise FileNotFoundError("no pyproject.toml above this module")


def default_data() -> Path | None:
    """$COMPACTION_EVAL_DATA, else `shared/data` beside the repository or one of its parents;
    None when COMPACTION_EVAL_NO_SHARED=1 (a clone without it, as the tests simulate)."""
    if os.environ.get("COMPACTION_EVAL_NO_SHARED") == "1":
        return None
    env = os.environ.get("COMPACTION_EVAL_DATA")
    if env:
        return Path(env)
    for parent in repo_root().parents:
        candidate = parent / "shared" / "data"
        if candidate.is_dir():
            return candidate
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m compaction_eval.corpus.importers.ship", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="the shared data folder (default: $COMPACTION_EVAL_DATA or ../shared/data)")
    parser.add_argument("--out", help="where to write (default: fixtures/real of the repository)")
    args = parser.parse_args(argv)
    data = Path(args.data) if args.data else default_data()
    if data is None or not data.is_dir():
        print("ship: error: no data folder (pass --data or set COMPACTION_EVAL_DATA)", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else repo_root() / "fixtures" / "real"
    try:
        summary = build(data, out)
    except ContractError as exc:
        print(f"ship: error: {exc}", file=sys.stderr)
        return 1
    for r in summary["rows"]:
        print(f"{r['folder']}: {r['traces']} trace(s), {r['messages']} messages")
    print(f"ship: {summary['files']} file(s) written to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
