"""The package's folders read as the flow: nothing imports upward, nothing imports in a circle."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import compaction_eval

PACKAGE = Path(compaction_eval.__file__).parent

# Stages from the ground floor up. A module may import its own stage and any stage below.
STAGES = {
    "contracts": 0,
    "stats": 0,
    "corpus": 1,
    "synth": 1,
    "compaction": 2,
    "recall": 3,
    "horizon": 3,
    "standins": 4,
    "replay": 5,
    "gate": 5,
    "validation": 5,
    "loopback": 7,  # speaks for every stand-in, the optimiser of tune/ included
    "tune": 6,
    "history": 6,  # indexes what the suites wrote; the report draws its trends
    "report": 7,
    "cli": 8,
    "api": 8,
    "inspect_registry": 8,
    "__init__": 9,
    "__main__": 9,
}


def _stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports() -> dict[str, set[str]]:
    """module -> compaction_eval modules it imports (top level and inside functions)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        module = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("compaction_eval"):
                graph[module].add(node.module)
            elif isinstance(node, ast.Import):
                graph[module].update(a.name for a in node.names if a.name.startswith("compaction_eval"))
    return graph


def test_every_stage_folder_has_a_rank():
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    assert folders | modules <= set(STAGES), f"give these a stage in STAGES: {sorted((folders | modules) - set(STAGES))}"


def test_nothing_imports_upward():
    upward = []
    for module, targets in _imports().items():
        for target in targets:
            if target == "compaction_eval":
                continue
            if STAGES[_stage(target)] > STAGES[_stage(module)]:
                upward.append(f"{module} -> {target}")
    assert not upward, "imports that run up the flow:\n" + "\n".join(sorted(upward))


def test_synth_is_a_leaf():
    importers = sorted(m for m, targets in _imports().items()
                       if _stage(m) != "synth" and any(_stage(t) == "synth" for t in targets))
    assert not importers


def test_no_import_cycles_between_stages_or_modules():
    graph = _imports()
    seen: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[str] = []

    def visit(node: str) -> None:
        seen[node] = 1
        stack.append(node)
        for nxt in graph.get(node, ()):
            if nxt == node or nxt.startswith(node + ".") or node.startswith(nxt + "."):
                continue  # a package and its own submodules
            if seen.get(nxt) == 1:
                cycles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in seen:
                visit(nxt)
        stack.pop()
        seen[node] = 2

    for module in sorted(graph):
        if module not in seen:
            visit(module)
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_tests_mirror_the_package_folders():
    tests = Path(__file__).parent
    folders = {p.name for p in tests.iterdir() if p.is_dir() and any(p.glob("test_*.py"))}
    assert folders and folders <= set(STAGES), f"test folders with no package stage: {sorted(folders - set(STAGES))}"
