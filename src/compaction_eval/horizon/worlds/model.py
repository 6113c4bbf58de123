"""The world model: a virtual workspace, its tools, the reference plan and the checker.

A world is pure data plus deterministic functions: the same (id, size) always gives the same
files, tool outputs and expected answer, so runs are reproducible and the scripted agent
(models/scripted.py) can rebuild the world it is in from the workspace tag in the tools.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

TOOL_NAMES = ("read_file", "grep", "list_dir", "run_tests", "query")


@dataclass(frozen=True)
class PlanStep:
    """One tool call of the reference plan.

    Args:
        function: the tool.
        args: its arguments (for `query`, `db` is filled in from the request's constraint).
        yields: answer fields whose evidence is in this step's output.
        evidence: regex of the output lines that carry those fields (copied into notes).
    """

    function: str
    args: dict[str, str]
    yields: tuple[str, ...] = ()
    evidence: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        """Identity of the step regardless of constraint-driven arguments (db)."""
        return (self.function, "|".join(f"{k}={v}" for k, v in sorted(self.args.items()) if k != "db"))


@dataclass
class World:
    """One long-horizon task.

    Args:
        id: unique id, `<family>-<nn>`.
        family: `build`, `audit` or `query`.
        size: the size preset it was generated with (`small`, `medium`, `large`).
        context_window: tokens; the suite enforces it whatever the model's own window.
        system: the system prompt.
        request: the original request: task, constraints and required answer format, once.
        files: the virtual file system, path -> text.
        tests_output: what `run_tests` prints.
        tables: query text -> result text (`query`).
        plan: the reference plan (tool calls in order; `submit` is implicit at the end).
        expected: the answer fields the checker requires, name -> exact value.
        answer_format: the answer line with `<field>` placeholders (also stated in `request`).
        constraint: a sentence of the request the checker enforces (see `violations`).
        extract: family function (visible text, request visible?) -> field values found.
        planted: field -> "early" | "mid" | "late" (where along the plan the evidence is).
    """

    id: str
    family: str
    size: str
    context_window: int
    system: str
    request: str
    files: dict[str, str]
    plan: list[PlanStep]
    expected: dict[str, str]
    answer_format: str
    constraint: str
    extract: Callable[[str, bool], dict[str, str | None]]
    planted: dict[str, str]
    tests_output: str = ""
    tables: dict[str, str] = field(default_factory=dict)
    required_db: str | None = None

    @property
    def tag(self) -> str:
        """The workspace tag written into every tool description (always in the request)."""
        return f"[workspace {self.id} size={self.size}]"

    # ------------------------------------------------------------------ tools

    def call(self, function: str, args: dict[str, Any]) -> str:
        """Run one tool deterministically; bad arguments give an error text, never raise."""
        try:
            if function == "read_file":
                path = str(args["path"])
                return self.files[path] if path in self.files else f"error: no such file: {path}"
            if function == "list_dir":
                return self._list_dir(str(args.get("path", ".")))
            if function == "grep":
                return self._grep(str(args["pattern"]), str(args.get("path", ".")))
            if function == "run_tests":
                return self.tests_output or "no tests configured"
            if function == "query":
                sql = " ".join(str(args["sql"]).split())
                db = str(args.get("db", "primary"))
                if sql not in self.tables:
                    return f"error: unknown table or query: {sql}"
                return f"-- db={db}\n" + self.tables[sql]
        except KeyError as exc:
            return f"error: missing argument {exc.args[0]!r} for {function}"
        return f"error: unknown tool {function}"

    def _list_dir(self, path: str) -> str:
        prefix = path.rstrip("/") + "/" if path not in (".", "") else ""
        entries = sorted({p[len(prefix):].split("/", 1)[0] + ("/" if "/" in p[len(prefix):] else "") for p in self.files if p.startswith(prefix)})
        return "\n".join(entries) if entries else f"error: no such directory: {path}"

    def _grep(self, pattern: str, path: str) -> str:
        prefix = "" if path in (".", "") else path.rstrip("/") + "/"
        out: list[str] = []
        count = 0
        for name in sorted(p for p in self.files if p.startswith(prefix)):
            lines = self.files[name].splitlines()
            for i, line in enumerate(lines):
                if pattern in line:
                    count += 1
                    # Two lines of context either side, like grep -C2: outputs get large.
                    for j in range(max(0, i - 2), min(len(lines), i + 3)):
                        sep = ":" if j == i else "-"
                        out.append(f"{name}{sep}{j + 1}{sep} {lines[j]}")
                    out.append("--")
        out.append(f"grep: {count} matches in {prefix or './'}")
        return "\n".join(out)

    # ---------------------------------------------------------------- checker

    def violations(self, calls: list[tuple[str, dict[str, Any]]]) -> list[str]:
        """Constraint violations in the tool calls the agent made."""
        bad: list[str] = []
        for function, args in calls:
            if function in ("write_file", "edit_file") and str(args.get("path", "")).startswith("tests/"):
                bad.append(f"wrote under tests/: {args.get('path')}")
            if self.required_db and function == "query" and str(args.get("db", "primary")) != self.required_db:
                bad.append(f"queried db={args.get('db', 'primary')} (required {self.required_db})")
        return bad

    def check(self, answer: str, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
        """Score a submitted answer: format, exact fields, constraints respected."""
        pattern = re.escape(self.answer_format)
        for name in self.expected:
            pattern = pattern.replace(re.escape(f"<{name}>"), f"(?P<{name}>.+?)")
        match = re.fullmatch(pattern, answer.strip())
        fields = {n: (match.group(n).strip() if match else None) for n in self.expected}
        correct = {n: fields[n] == v for n, v in self.expected.items()}
        violations = self.violations(calls)
        return {
            "format_ok": match is not None,
            "fields": correct,
            "violations": violations,
            "completed": match is not None and all(correct.values()) and not violations,
        }
