"""Faults the loopback server injects on demand.

Kinds:
    rate_limit   429 `rate_limit_error` with a `retry-after` header
    overloaded   529 `overloaded_error`
    server_error 500 `api_error`
    slow         the answer waits `delay` seconds (past a client's timeout)
    drop         the connection is closed without an answer
    malformed    200 with a body that is not valid JSON (or a broken event stream)
    hang         the request is held until the plan is released (for kill tests)

A plan is a queue of (fault, count) consumed one request at a time, plus an optional
persistent fault applied once the queue is empty, so "two 429s then success" and
"always 529" are both one line.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

FAULT_KINDS = ("rate_limit", "overloaded", "server_error", "slow", "drop", "malformed", "hang")


@dataclass(frozen=True)
class Fault:
    """One injected fault.

    Args:
        kind: one of FAULT_KINDS.
        retry_after: seconds in the `retry-after` header of a 429.
        delay: seconds a `slow` answer waits.
    """

    kind: str
    retry_after: float = 0.0
    delay: float = 5.0

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault {self.kind!r}: use one of {', '.join(FAULT_KINDS)}")


def parse_fault(spec: str) -> tuple[Fault, int | None]:
    """`kind[:count]` (count `*` or absent in a persistent spec) as (Fault, count or None)."""
    kind, _, count = spec.partition(":")
    return Fault(kind), (None if count in ("", "*") else int(count))


class FaultPlan:
    """Which fault, if any, the next request gets (thread-safe)."""

    def __init__(self) -> None:
        self._queue: list[list] = []  # [fault, remaining]
        self._persistent: Fault | None = None
        self._lock = threading.Lock()
        self.released = threading.Event()
        self.released.set()

    def push(self, fault: Fault | str, count: int = 1) -> FaultPlan:
        """The next `count` requests (after those already queued) get `fault`."""
        fault = Fault(fault) if isinstance(fault, str) else fault
        with self._lock:
            self._queue.append([fault, count])
            if fault.kind == "hang":
                self.released.clear()
        return self

    def always(self, fault: Fault | str | None) -> FaultPlan:
        """Every request after the queue gets `fault` (None: no persistent fault)."""
        fault = Fault(fault) if isinstance(fault, str) else fault
        with self._lock:
            self._persistent = fault
            if fault is not None and fault.kind == "hang":
                self.released.clear()
        return self

    def clear(self) -> None:
        """No more faults; held (`hang`) requests are released."""
        with self._lock:
            self._queue.clear()
            self._persistent = None
        self.released.set()

    def after(self, successes: int, fault: Fault | str) -> FaultPlan:
        """`successes` requests pass, then every request gets `fault`."""
        if successes:
            self.push(Fault("slow", delay=0.0), successes)
        return self.always(fault)

    def next(self) -> Fault | None:
        """The fault for the request being handled now (consumes the queue)."""
        with self._lock:
            while self._queue:
                entry = self._queue[0]
                entry[1] -= 1
                if entry[1] <= 0:
                    self._queue.pop(0)
                return entry[0] if not (entry[0].kind == "slow" and entry[0].delay == 0.0) else None
            return self._persistent
