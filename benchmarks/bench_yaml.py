"""Reading labels YAML with line maps: PyYAML's C composer + one constructor walk (now)
against the former pure-Python compose + `safe_load(serialize(node))` per node (reference).

    python benchmarks/bench_yaml.py [--repeat 3]

Both readers run in the same process on every labels file of the repository (labels/,
labels/real, labels/synth-large, labels/gold), data and line maps are checked to be
identical, and the result is printed as a ratio: reference time / new time.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from compaction_eval.contracts.yamlfile import _Loader, parse_yaml_with_lines  # noqa: E402


def _reference_construct(node, path, lines):
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out = {}
        for key_node, value_node in node.value:
            key = yaml.safe_load(yaml.serialize(key_node))
            child = f"{path}.{key}" if path != "$" else str(key)
            out[key] = _reference_construct(value_node, child, lines)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_reference_construct(v, f"{path}[{i}]", lines) for i, v in enumerate(node.value)]
    return yaml.safe_load(yaml.serialize(node))


def reference(text: str):
    """The reader before issue 14 (pure-Python SafeLoader, one safe_load per node)."""
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    lines: dict[str, int] = {}
    return (_reference_construct(node, "$", lines) if node is not None else None), lines


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    files = sorted(p for p in (ROOT / "labels").rglob("*") if p.suffix in (".yaml", ".yml"))
    texts = [(str(p), p.read_text(encoding="utf-8")) for p in files]
    for where, text in texts:
        assert parse_yaml_with_lines(text, where) == reference(text), f"{where}: readers differ"
    best = {}
    for name, fn in (("reference", lambda t, w: reference(t)), ("composer", parse_yaml_with_lines)):
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            for where, text in texts:
                fn(text, where)
            times.append(time.perf_counter() - start)
        best[name] = min(times)
    print(f"{len(texts)} YAML files under labels/ ({_Loader.__name__}); same data and line maps")
    print(f"reference (SafeLoader + safe_load per node): {best['reference']:.3f} s")
    print(f"composer  ({_Loader.__name__} + one walk):   {best['composer']:.3f} s")
    print(f"speed-up: {best['reference'] / best['composer']:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
