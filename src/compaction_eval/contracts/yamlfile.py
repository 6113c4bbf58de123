"""The one YAML reader of the package: labels, gold sets, controls and prompt headers.

YAML is composed with PyYAML's C composer (`CSafeLoader`, falling back to `SafeLoader` when
libyaml is absent) and built into plain data by a walk over the node graph that records
the line of every path (`facts[2].keys[0]` -> 14). The walk is the safety boundary:

- aliases (`*name`) are refused: a few hundred bytes of nested aliases expand to billions
  of nodes (a "billion laughs" bomb), and no file of ours needs them;
- only the standard scalar tags (str, int, float, bool, null, timestamp) are accepted, and
  no tag at all on a mapping or a sequence (`!!python/...`, `!!set`, `!custom`);
- a mapping key must be a scalar and may appear once;
- nesting is bounded (`MAX_DEPTH`).

Every refusal is a ContractError naming the file, the line and the path.
"""

from __future__ import annotations

from typing import Any

import yaml

from compaction_eval.contracts.problems import ContractError, Problem

try:  # libyaml: ~25x faster composition
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - libyaml missing
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]

MAX_DEPTH = 64
MAX_BYTES = 16 * 1024 * 1024
_T = "tag:yaml.org,2002:"
SCALAR_TAGS = frozenset(_T + t for t in ("str", "int", "float", "bool", "null", "timestamp"))
MAP_TAG, SEQ_TAG = _T + "map", _T + "seq"


def _short_tag(tag: str) -> str:
    return "!!" + tag[len(_T):] if tag.startswith(_T) else tag


class _Builder:
    def __init__(self, loader: Any, where: str, lines: dict[str, int]):
        self.loader = loader
        self.where = where
        self.lines = lines
        self.seen: set[int] = set()

    def fail(self, node: yaml.Node, path: str, message: str, line: int | None = None) -> None:
        line = node.start_mark.line + 1 if line is None else line
        place = f"line {line}" + (f", {path}" if path != "$" else "")
        raise ContractError([Problem(self.where, place, message)])

    def build(self, node: yaml.Node, path: str, depth: int, parent_line: int | None = None) -> Any:
        if id(node) in self.seen:  # the composer shares the anchored node: an alias
            self.fail(node, path, f"YAML aliases (*name) are not allowed: write the value out (anchored at line {node.start_mark.line + 1})", parent_line)
        self.seen.add(id(node))
        if depth > MAX_DEPTH:
            self.fail(node, path, f"nested more than {MAX_DEPTH} levels deep")
        self.lines[path] = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            if node.tag != MAP_TAG:
                self.fail(node, path, f"tag {_short_tag(node.tag)} is not allowed on a mapping")
            out: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    self.fail(key_node, path, "a mapping key must be a plain value, not a list or mapping")
                key = self.build(key_node, f"{path}.<key>", depth + 1)
                child = f"{path}.{key}" if path != "$" else str(key)
                if key in out:
                    self.fail(key_node, child, f"duplicate key {key!r}")
                out[key] = self.build(value_node, child, depth + 1, key_node.start_mark.line + 1)
            self.lines.pop(f"{path}.<key>", None)
            return out
        if isinstance(node, yaml.SequenceNode):
            if node.tag != SEQ_TAG:
                self.fail(node, path, f"tag {_short_tag(node.tag)} is not allowed on a list")
            return [self.build(v, f"{path}[{i}]", depth + 1, node.start_mark.line + 1) for i, v in enumerate(node.value)]
        if node.tag not in SCALAR_TAGS:
            self.fail(node, path, f"tag {_short_tag(node.tag)} is not allowed (plain strings, numbers, booleans and null only)")
        try:
            return self.loader.construct_object(node, deep=True)
        except (yaml.YAMLError, ValueError, OverflowError) as exc:
            self.fail(node, path, f"bad {_short_tag(node.tag)} value {node.value[:40]!r}: {str(exc).splitlines()[0]}")
        return None  # unreachable


def parse_yaml_with_lines(text: str, where: str) -> tuple[Any, dict[str, int]]:
    """Plain data from YAML `text`, and the line of every path in it (`$` is the root).

    Raises ContractError naming `where` and the line for malformed YAML, aliases, tags
    other than the standard scalar ones, duplicate keys and excessive nesting.
    """
    if len(text) > MAX_BYTES:
        raise ContractError([Problem(where, "", f"YAML file larger than {MAX_BYTES // (1024 * 1024)} MiB")])
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        place = f"line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ContractError([Problem(where, place, f"malformed YAML: {problem}")]) from None
    except RecursionError:
        raise ContractError([Problem(where, "", f"YAML nested more than {MAX_DEPTH} levels deep")]) from None
    lines: dict[str, int] = {}
    if node is None:
        return None, lines
    try:
        data = _Builder(loader, where, lines).build(node, "$", 0)
    except RecursionError:  # pragma: no cover - MAX_DEPTH stops it first
        raise ContractError([Problem(where, "", f"YAML nested more than {MAX_DEPTH} levels deep")]) from None
    finally:
        loader.dispose()
    return data, lines


def load_yaml_text(text: str, where: str) -> Any:
    """Plain data from YAML `text` (see `parse_yaml_with_lines` for what is refused)."""
    return parse_yaml_with_lines(text, where)[0]


def read_yaml_file(path: Any) -> Any:
    """Plain data from a YAML file; unreadable, non-UTF-8 or unsafe YAML -> ContractError."""
    from pathlib import Path

    path = Path(path)
    try:
        with open(path, "rb") as fh:  # at most MAX_BYTES + 1: a link to /dev/zero is refused, not read to the end
            raw = fh.read(MAX_BYTES + 1)
        if len(raw) > MAX_BYTES:
            raise ContractError([Problem(str(path), "", f"YAML file larger than {MAX_BYTES // (1024 * 1024)} MiB")])
        text = raw.decode("utf-8")
    except FileNotFoundError:
        raise ContractError([Problem(str(path), "", "file not found")]) from None
    except IsADirectoryError:
        raise ContractError([Problem(str(path), "", "is a directory, not a YAML file")]) from None
    except UnicodeDecodeError as exc:
        raise ContractError([Problem(str(path), f"byte {exc.start}", "not UTF-8 text")]) from None
    except OSError as exc:
        raise ContractError([Problem(str(path), "", f"cannot read: {exc.strerror or exc}")]) from None
    return load_yaml_text(text, str(path))
