"""Realistic tool outputs: source files, grep hits, pytest logs, tracebacks, diffs, env dumps.

Every function takes a `random.Random` (or none at all) so the same seed gives the same text;
nothing here reads the clock, the environment or the file system. The filler code is not
meant to run: it is meant to look and weigh (in tokens) like the files an agent reads, so a
compaction prompt has to dig the planted lines out of plausible noise.
"""

from __future__ import annotations

import difflib
import random
import re
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass

VERBS = (
    "build", "load", "resolve", "apply", "compute", "collect", "normalize", "render", "merge",
    "validate", "parse", "fetch", "sync", "record", "split", "format", "prepare", "refresh",
)
QUALIFIERS = ("pending", "active", "stale", "remote", "cached", "raw", "batch", "default", "bulk")
COMMENTS = (
    "Keep this in sync with the serializer: the API returns the same shape.",
    "The upstream client retries on its own, so a single attempt is enough here.",
    "Sorting keeps the output stable between runs (snapshot tests compare it).",
    "Avoid a second query: the caller already holds the rows.",
    "Legacy callers pass a plain dict; accept both until they are migrated.",
    "This is hot in profiles, so no logging above debug level.",
    "None means 'not configured', which is different from an empty list.",
    "TODO: drop the fallback once every tenant is on the v2 schema.",
    "The lock guards the cache, not the database call.",
    "Do not raise here: the scheduler treats exceptions as hard failures.",
    "Timestamps are UTC everywhere below this point.",
    "Cheap check first; the expensive path is rare in production.",
    "Copy before mutating: callers keep a reference to the original.",
    "See the incident notes in docs/runbooks for why this is capped.",
)
SCALAR_TYPES = ("str", "int", "bool", "Decimal", "datetime", "Sequence[str]", "Mapping[str, Any]")


@dataclass(frozen=True)
class Vocab:
    """Words a fake code base is written in.

    Args:
        package: the top-level import name (`ledgerline`).
        nouns: lower-case domain nouns, used for functions, arguments and attributes.
        classes: CamelCase class names of the domain.
    """

    package: str
    nouns: tuple[str, ...]
    classes: tuple[str, ...]


@dataclass
class SourceFile:
    """A file of the fake repository.

    Args:
        path: repository-relative path, as tools print it.
        lines: the lines, without newlines.
    """

    path: str
    lines: list[str]

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"

    def numbered(self, start: int = 1, end: int | None = None) -> str:
        """Lines start..end (1-based, inclusive) the way `cat -n` prints them."""
        end = len(self.lines) if end is None else min(end, len(self.lines))
        return "\n".join(f"{n:>6}\t{self.lines[n - 1]}" for n in range(max(start, 1), end + 1))

    def line_of(self, needle: str, after: int = 0) -> int:
        """1-based number of the first line after line `after` that contains `needle`."""
        for n in range(after + 1, len(self.lines) + 1):
            if needle in self.lines[n - 1]:
                return n
        raise ValueError(f"{needle!r} not in {self.path}")

    def replaced_lines(self, old: Sequence[str], new: Sequence[str]) -> SourceFile:
        """A copy with the one run of lines equal to `old` replaced by `new`."""
        k = len(old)
        hits = [i for i in range(len(self.lines) - k + 1) if self.lines[i:i + k] == list(old)]
        if len(hits) != 1:
            raise ValueError(f"block starting {old[0]!r} occurs {len(hits)} times in {self.path}")
        return SourceFile(self.path, self.lines[:hits[0]] + list(new) + self.lines[hits[0] + k:])

    def replaced(self, old: str, new: str) -> SourceFile:
        """A copy with the one line equal to `old` replaced by `new`."""
        hits = [i for i, line in enumerate(self.lines) if line == old]
        if len(hits) != 1:
            raise ValueError(f"{old!r} occurs {len(hits)} times in {self.path}")
        lines = list(self.lines)
        lines[hits[0]] = new
        return SourceFile(self.path, lines)


# ------------------------------------------------------------------------- python code


def _camel(word: str) -> str:
    return "".join(part.capitalize() for part in word.split("_"))


def _type_for(rng: random.Random, vocab: Vocab, noun: str) -> str:
    cls = _camel(noun)
    if cls in vocab.classes:
        return cls
    return rng.choice(SCALAR_TYPES)


def _statements(rng: random.Random, vocab: Vocab, args: list[str], method: bool) -> list[str]:
    """A plausible function body (4 spaces relative indent), ending in a return."""
    names = list(args) or ["value"]
    out: list[str] = []
    used: set[int] = set()
    for _ in range(rng.randint(3, 7)):
        kind = rng.randrange(11)
        if kind in used and kind not in (4, 5):
            continue
        used.add(kind)
        a = rng.choice(names)
        noun = rng.choice(vocab.nouns)
        if kind == 0:
            out += [f"if {a} is None:", f'    raise ValueError("{a} is required")']
        elif kind == 1:
            acc, it = f"{noun}s", noun[:1] if noun[:1] not in names else "item"
            attr = rng.choice(vocab.nouns)
            out += [
                f"{acc} = []",
                f"for {it} in {a}:",
                f"    if getattr({it}, {attr!r}, None) is None:",
                "        continue",
                f"    {acc}.append({it})",
            ]
            names.append(acc)
        elif kind == 2:
            fn = f"{rng.choice(VERBS)}_{noun}"
            out.append(f'logger.debug("{fn}: %s", {a})')
        elif kind == 3:
            var = f"{noun}_{rng.choice(('map', 'index', 'by_id', 'rows'))}"
            key = rng.choice([n for n in vocab.nouns if n != noun])
            out += [f"{var} = {{", f'    "{key}": {a},', f'    "{noun}": {rng.choice(names)},', "}"]
            names.append(var)
        elif kind in (4, 5):
            var = f"{noun}" if noun not in names else f"{noun}_{rng.choice(QUALIFIERS)}"
            fn = f"{rng.choice(VERBS)}_{rng.choice(vocab.nouns)}"
            recv = "self." if method and rng.random() < 0.5 else ""
            kw = rng.choice(("strict=True", "limit=100", "default=None", "refresh=False", f"{noun}={a}"))
            out.append(f"{var} = {recv}{fn}({a}, {kw})")
            names.append(var)
        elif kind == 6:
            var = rng.choice(names)
            key = rng.choice(vocab.nouns)
            cache = "self._cache" if method else "_CACHE"
            out += [
                "try:",
                f"    {var} = {cache}[{key!r}]",
                "except KeyError:",
                f"    {var} = _load_{key}({a})",
                f"    {cache}[{key!r}] = {var}",
            ]
        elif kind == 7:
            out.append(f"# {rng.choice(COMMENTS)}")
        elif kind == 8:
            out += [f"if not {rng.choice(names)}:", f"    return {rng.choice(('None', '[]', '{}', '0', 'False'))}"]
        elif kind == 9 and method:
            out += ["with self._lock:", f"    self._{noun}_seen += 1"]
        elif kind == 10:
            other = rng.choice(names)
            out += [
                f"if isinstance({other}, dict):",
                f"    {other} = {_camel(rng.choice(vocab.nouns))}.from_dict({other})",
            ]
    out.append(f"return {names[-1]}")
    return out


def python_function(
    rng: random.Random, vocab: Vocab, *, method: bool = False, name: str | None = None, used: set[str] | None = None
) -> list[str]:
    """One def with signature, docstring and body, unindented (methods get `self`).

    Args:
        used: names already defined in the module; the new name is added to it.
    """
    used = set() if used is None else used
    noun = rng.choice(vocab.nouns)
    while name is None or name in used:
        name = f"{rng.choice(VERBS)}_{noun}"
        if rng.random() < 0.3:
            name += f"_{rng.choice(QUALIFIERS)}"
        if method and rng.random() < 0.25:
            name = "_" + name
        noun = rng.choice(vocab.nouns)
    used.add(name)
    args = rng.sample(vocab.nouns, k=rng.randint(1, 3))
    params = [f"{a}: {_type_for(rng, vocab, a)}" for a in args]
    if rng.random() < 0.4:
        params.append("*")
        params.append(rng.choice(("strict: bool = False", "limit: int | None = None", "now: datetime | None = None")))
    if method:
        params.insert(0, "self")
    ret = _type_for(rng, vocab, rng.choice(vocab.nouns)) + (" | None" if rng.random() < 0.4 else "")
    verb = name.lstrip("_").split("_")[0].capitalize()
    lines = [f"def {name}({', '.join(params)}) -> {ret}:"]
    summary = f"{verb} the {name.lstrip('_').split('_')[1]} for ``{args[0]}``."
    if rng.random() < 0.5:
        lines += [f'    """{summary}', "", f"    {rng.choice(COMMENTS)}", '    """']
    else:
        lines.append(f'    """{summary}"""')
    lines += ["    " + s if s else "" for s in _statements(rng, vocab, args, method)]
    return lines


def python_class(rng: random.Random, vocab: Vocab, name: str | None = None, used: set[str] | None = None) -> list[str]:
    """A class with an __init__ and 2-4 methods (`used`: names taken in the module)."""
    used = set() if used is None else used
    while name is None or name in used:
        name = rng.choice(vocab.classes) + rng.choice(("Service", "Repository", "Builder", "Cache", "Client", "Index"))
    used.add(name)
    methods: set[str] = set()
    attrs = rng.sample(vocab.nouns, k=3)
    lines = [f"class {name}:", f'    """{rng.choice(COMMENTS)}"""', ""]
    lines.append(f"    def __init__(self, {', '.join(attrs)}) -> None:")
    lines += [f"        self.{a} = {a}" for a in attrs]
    lines += ["        self._cache: dict[str, Any] = {}", "        self._lock = threading.Lock()"]
    for _ in range(rng.randint(2, 4)):
        lines.append("")
        lines += ["    " + s if s else "" for s in python_function(rng, vocab, method=True, used=methods)]
    return lines


def python_module(
    rng: random.Random,
    path: str,
    vocab: Vocab,
    *,
    docstring: str,
    imports: Sequence[str] = (),
    planted: Sequence[Sequence[str]] = (),
    target_lines: int = 200,
) -> SourceFile:
    """A module of about `target_lines` lines with `planted` blocks spread through filler.

    Args:
        rng: the generator's random source.
        path: repository-relative path of the module.
        vocab: the domain words of the fake code base.
        docstring: the module docstring (first line, may contain newlines).
        imports: project imports to add after the standard ones.
        planted: blocks (lists of lines) that must appear verbatim, in order; callers find
            them again with `SourceFile.line_of`.
        target_lines: rough total size; filler blocks are added until it is reached.
    """
    head = [f'"""{docstring}"""'] if "\n" not in docstring else [f'"""{docstring}', '"""']
    head = "\n".join(head).split("\n") + [""]
    head += ["from __future__ import annotations", ""]
    std = ["import logging", "import threading"]
    std += rng.sample(["import json", "import itertools", "import os", "import time", "import re"], k=2)
    head += sorted(std)
    std_from = [i for i in imports if i.startswith(("from datetime ", "from typing ", "from decimal "))]
    imports = [i for i in imports if i not in std_from]
    defaults = {"from datetime ": "from datetime import datetime", "from decimal ": "from decimal import Decimal",
                "from typing ": "from typing import Any, Mapping, Sequence"}
    for prefix, default in defaults.items():
        if not any(i.startswith(prefix) for i in std_from):
            std_from.append(default)
    head += ["from dataclasses import dataclass, field", *sorted(std_from), ""]
    head += list(imports) + ([""] if imports else [])
    head += ["logger = logging.getLogger(__name__)", ""]
    constants: set[str] = set()
    for _ in range(rng.randint(2, 4)):
        const = f"{rng.choice(vocab.nouns).upper()}_{rng.choice(('LIMIT', 'TIMEOUT_S', 'BATCH_SIZE', 'MAX_RETRIES'))}"
        if const not in constants:
            constants.add(const)
            head.append(f"{const} = {rng.choice((3, 30, 100, 500, 1000, 5000))}")
    head += ["_CACHE: dict[str, Any] = {}"]
    planted_size = sum(len(b) + 2 for b in planted)
    filler: list[list[str]] = []
    size = len(head) + planted_size
    used: set[str] = set()
    while size < target_lines:
        block = python_class(rng, vocab, used=used) if rng.random() < 0.3 else python_function(rng, vocab, used=used)
        filler.append(block)
        size += len(block) + 2
    return _assemble(path, head, filler, planted)


def pytest_module(
    rng: random.Random,
    path: str,
    vocab: Vocab,
    *,
    imports: Sequence[str],
    planted: Sequence[Sequence[str]] = (),
    target_lines: int = 150,
    test_names: Sequence[str] = (),
    docstring: str | None = None,
) -> SourceFile:
    """A pytest file: imports, a fixture or two, tests named `test_names` then random ones."""
    topic = path.rsplit("/", 1)[-1].removeprefix("test_").removesuffix(".py").replace("_", " ")
    head = ['"""' + (docstring or f"Tests for {topic}.") + '"""', ""]
    head += ["from __future__ import annotations", "", "from datetime import date, datetime, timezone",
             "from decimal import Decimal", "", "import pytest"]
    head += ([""] + list(imports)) if imports else []
    # `request` is a reserved fixture name in pytest.
    fixtures = rng.sample([n for n in vocab.nouns if n != "request"], k=2)
    for fx in fixtures:
        head += ["", "", "@pytest.fixture", f"def {fx}(factory):", f"    return factory.{fx}()"]
    names = list(test_names)
    taken = set(names)
    blocks: list[list[str]] = []
    size = len(head) + sum(len(b) + 2 for b in planted)
    i = 0
    while size < target_lines or i < len(names):
        if i < len(names):
            name = names[i]
        else:
            name = f"test_{rng.choice(VERBS)}_{rng.choice(vocab.nouns)}_{rng.choice(QUALIFIERS)}"
            if name in taken:
                continue
            taken.add(name)
        i += 1
        fx = rng.choice(fixtures)
        noun = rng.choice(vocab.nouns)
        body = [f"def {name}({fx}):"]
        body.append(f"    {noun} = {fx}.{rng.choice(VERBS)}_{noun}({rng.choice(('strict=True', 'limit=3', ''))})")
        for _ in range(rng.randint(1, 3)):
            attr = rng.choice(vocab.nouns)
            expected = rng.choice(("None", "[]", "3", repr(attr), 'Decimal("0.00")'))
            body.append(f"    assert {noun}.{attr} == {expected}")
        if rng.random() < 0.3:
            body = ["@pytest.mark.parametrize(\"strict\", [True, False])"] + body
        blocks.append(body)
        size += len(body) + 2
    return _assemble(path, head, blocks, planted)


def test_names(rng: random.Random, vocab: Vocab, n: int, prefix: str = "test") -> list[str]:
    """`n` distinct plausible test function names."""
    out: list[str] = []
    while len(out) < n:
        name = f"{prefix}_{rng.choice(VERBS)}_{rng.choice(vocab.nouns)}_{rng.choice(QUALIFIERS)}"
        if name not in out:
            out.append(name)
    return out


# ------------------------------------------------------------------------------ search


def grep_output(hits: Sequence[tuple[str, int, str]]) -> str:
    """`grep -rn` style lines: path:line:text."""
    return "\n".join(f"{path}:{n}:{text}" for path, n, text in hits)


def usage_lines(rng: random.Random, symbol: str, module: str, vocab: Vocab) -> list[str]:
    """Plausible lines of code that use `symbol` (imported from `module`)."""
    noun = rng.choice(vocab.nouns)
    other = rng.choice(vocab.nouns)
    return [
        f"from {module} import {symbol}",
        f"    {noun} = {symbol}({other}, strict=True)",
        f"        return {symbol}(request.{noun})",
        f"    {noun}_{other} = [{symbol}(x) for x in {other}s]",
        f"    if {symbol}({noun}) is None:",
        f"        result = {symbol}({noun}, {other}={other})",
        f"    # {symbol} is cached per request; see {module}",
    ]


def synthetic_hits(
    rng: random.Random,
    files: Sequence[str],
    total: int,
    templates: Callable[[], Sequence[str]],
    taken: set[tuple[str, int]] | None = None,
) -> list[tuple[str, int, str]]:
    """`total` made-up hits spread over `files` (each at least once), for files never read.

    Args:
        templates: returns candidate hit lines; the first is used for a file's first hit
            (an import, typically), the others at random.
        taken: (path, line) pairs already used by other hits; updated, so that two searches
            over the same made-up files never put two different texts on one line.
    """
    taken = set() if taken is None else taken
    if total < len(files):
        raise ValueError("need at least one hit per file")
    counts = split_total(rng, total, len(files), minimum=1)
    hits: list[tuple[str, int, str]] = []
    for path, count in zip(files, counts, strict=True):
        free = [n for n in range(3, 420) if (path, n) not in taken]
        linenos = sorted(rng.sample(free, k=count))
        taken.update((path, n) for n in linenos)
        for k, n in enumerate(linenos):
            lines = templates()
            hits.append((path, n, lines[0] if k == 0 else rng.choice(lines[1:])))
    return hits


def stub_file(path: str, line: str, at: int) -> SourceFile:
    """A file known only by one line at line `at` (for a grep hit in a file never read)."""
    return SourceFile(path, [""] * (at - 1) + [line])


def real_hits(regex: str, files: Sequence[SourceFile]) -> list[tuple[str, int, str]]:
    """Hits of `regex` in files the trace shows elsewhere, so a grep agrees with a later read."""
    pat = re.compile(regex)
    return [(f.path, n, line) for f in files for n, line in enumerate(f.lines, 1) if pat.search(line)]


def search(
    rng: random.Random,
    regex: str,
    *,
    known: Sequence[SourceFile] = (),
    others: Sequence[str] = (),
    n_other: int = 0,
    templates: Callable[[], Sequence[str]] | None = None,
) -> str:
    """Grep output: real hits in `known` files plus `n_other` made-up hits in `others`, sorted."""
    hits = real_hits(regex, known)
    if others and n_other:
        hits += synthetic_hits(rng, others, n_other, templates or (lambda: [regex]))
    return grep_output(sorted(hits, key=lambda h: (h[0], h[1])))


def split_total(rng: random.Random, total: int, parts: int, minimum: int = 0) -> list[int]:
    """`parts` non-negative integers, each >= minimum, summing to `total`."""
    rest = total - minimum * parts
    if rest < 0:
        raise ValueError("total too small")
    cuts = sorted(rng.randint(0, rest) for _ in range(parts - 1))
    sizes = [b - a for a, b in zip([0, *cuts], [*cuts, rest], strict=True)]
    return [minimum + s for s in sizes]


def ls_output(entries: Sequence[str]) -> str:
    """`ls -la`-free listing as list_dir returns it: one entry a line, dirs end in '/'."""
    return "\n".join(entries)


# ------------------------------------------------------------------------------ pytest


def pytest_header(*, rootdir: str, collected: int, plugins: str = "cov-5.0.0, xdist-3.6.1, randomly-3.15.0") -> str:
    return "\n".join([
        "============================= test session starts ==============================",
        "platform linux -- Python 3.11.9, pytest-8.2.1, pluggy-1.5.0",
        f"rootdir: {rootdir}",
        "configfile: pyproject.toml",
        f"plugins: {plugins}",
        f"collected {collected} item{'s' if collected != 1 else ''}",
        "",
    ])


def pytest_progress(rng: random.Random, files: Sequence[tuple[str, int, int, int]]) -> str:
    """Progress lines for (path, n_tests, n_failed, n_skipped) per file, with percentages."""
    total = sum(f[1] for f in files) or 1
    done = 0
    out: list[str] = []
    for path, n, failed, skipped in files:
        marks = ["F"] * failed + ["s"] * skipped + ["."] * (n - failed - skipped)
        rng.shuffle(marks)
        # pytest wraps at the terminal width (80): the first line also holds the path.
        start, first = 0, True
        while start < n or first:
            prefix = path + " " if first else ""
            width = max(8, 71 - len(prefix))
            chunk = "".join(marks[start:start + width])
            start += width
            done += len(chunk)
            out.append(f"{prefix + chunk:<71}[{100 * done // total:>3}%]")
            first = False
    return "\n".join(out)


def pytest_summary(*, failed: int = 0, passed: int = 0, skipped: int = 0, warnings: int = 0,
                   errors: int = 0, seconds: float = 1.0) -> str:
    """The closing `=== 1 failed, 347 passed in 41.27s ===` line."""
    parts = []
    for n, word in ((failed, "failed"), (passed, "passed"), (skipped, "skipped"),
                    (warnings, "warnings"), (errors, "errors")):
        if n:
            parts.append(f"{n} {word if n != 1 or word not in ('warnings', 'errors') else word[:-1]}")
    inner = f" {', '.join(parts)} in {seconds:.2f}s "
    pad = max(2, (80 - len(inner)) // 2)
    return "=" * pad + inner + "=" * pad


def pytest_failure_header(test: str) -> str:
    inner = f" {test} "
    pad = max(2, (80 - len(inner)) // 2)
    return "_" * pad + inner + "_" * pad


def short_summary(failures: Sequence[tuple[str, str]]) -> str:
    """`short test summary info` lines: (test id, one-line reason)."""
    head = "=========================== short test summary info ============================"
    return "\n".join([head, *(f"FAILED {t} - {why}" for t, why in failures)])


def traceback_frames(frames: Sequence[tuple[str, int, str, str]], error: str) -> str:
    """Pytest's `--tb=short`-style frames (path, line, function, code) ending in `E   error`."""
    out: list[str] = []
    for path, n, func, code in frames:
        out += [f"{path}:{n}: in {func}", f"    {code.strip()}"]
    out.append(f"E   {error}")
    return "\n".join(out)


def python_traceback(frames: Sequence[tuple[str, int, str, str]], error: str) -> str:
    """A plain CPython traceback (path, line, function, code) ending in `error`."""
    out = ["Traceback (most recent call last):"]
    for path, n, func, code in frames:
        out += [f'  File "{path}", line {n}, in {func}', f"    {code.strip()}"]
    out.append(error)
    return "\n".join(out)


# -------------------------------------------------------------------------------- git


def unified_diff(path: str, before: Sequence[str], after: Sequence[str], rng: random.Random, context: int = 3) -> str:
    """`git diff` of one file between two versions of its lines."""
    body = list(difflib.unified_diff(list(before), list(after), f"a/{path}", f"b/{path}", n=context, lineterm=""))
    return "\n".join([f"diff --git a/{path} b/{path}", f"index {short_sha(rng)}..{short_sha(rng)} 100644", *body])


def short_sha(rng: random.Random) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(7))


def git_log(entries: Sequence[tuple[str, str, str, str]]) -> str:
    """`git log --format='%h %ad %an %s' --date=short`: (sha, date, author, subject)."""
    return "\n".join(f"{sha} {date} {author:<16} {subject}" for sha, date, author, subject in entries)


# ----------------------------------------------------------------------- env, secrets


def fake_live_token(rng: random.Random, prefix: str = "sk-live-") -> str:
    """A token that looks live (for avoid items); the random tail makes it unique per trace."""
    return prefix + "".join(rng.choice("0123456789abcdef") for _ in range(32))


def fake_aws_key_id(rng: random.Random) -> str:
    """An AWS-style access key id; ends in EXAMPLE like AWS's documented sample keys, so
    secret scanners treat it as the placeholder it is."""
    return "AKIA" + "".join(rng.choice(string.ascii_uppercase + "234567") for _ in range(9)) + "EXAMPLE"


def env_dump(rng: random.Random, specific: dict[str, str], *, home: str = "/home/runner", shell: bool = True) -> str:
    """`env | sort` output: `specific` variables plus, with `shell`, the usual process ones."""
    base = {} if not shell else {
        "HOME": home,
        "HOSTNAME": "runner-" + "".join(rng.choice("0123456789abcdef") for _ in range(8)),
        "LANG": "C.UTF-8",
        "PATH": "/opt/hostedtoolcache/Python/3.11.9/x64/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PWD": f"{home}/work",
        "PYTHONUNBUFFERED": "1",
        "SHLVL": "1",
        "TZ": "UTC",
        "_": "/usr/bin/env",
    }
    base.update(specific)
    return "\n".join(f"{k}={v}" for k, v in sorted(base.items()))


def sql_table(columns: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """psql-style aligned output with the `(N rows)` footer."""
    cells = [[str(c) for c in columns]] + [[str(v) for v in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    fmt = lambda r: " " + " | ".join(v.rjust(w) if v.replace(",", "").replace(".", "").isdigit() else v.ljust(w)
                                     for v, w in zip(r, widths, strict=True))
    out = [fmt(cells[0]), "-" + "-+-".join("-" * w for w in widths) + "-"]
    out += [fmt(r) for r in cells[1:]]
    out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(out)


def _assemble(path: str, head: list[str], filler: list[list[str]], planted) -> "SourceFile":
    """The file: head, then the filler blocks with the planted blocks spread through them
    (neither first nor last), blocks separated by two blank lines."""
    blocks = list(filler)
    for k, block in enumerate(planted):
        pos = max(1, round(len(blocks) * (k + 1) / (len(planted) + 1)))
        blocks.insert(min(pos, len(blocks)), list(block))
    lines = list(head)
    for block in blocks:
        lines += ["", ""] + block
    return SourceFile(path, lines)
