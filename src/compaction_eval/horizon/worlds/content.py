"""Deterministic filler text: code, logs and tables that look plausible and cost tokens.

Everything is drawn from a `random.Random` seeded by the world id, so a world is identical on
every machine and run.
"""

from __future__ import annotations

import random

WORDS = (
    "cache config loader session retry buffer window parser token index shard batch queue "
    "worker schema record stream cursor payload handler router metric budget ledger policy"
).split()

SIZES_LINES = {"small": 110, "medium": 420, "large": 2000}


def rng_for(world_id: str) -> random.Random:
    # str hash is salted per process: derive the seed from the characters instead.
    seed = 0
    for ch in world_id:
        seed = (seed * 131 + ord(ch)) % (2**31)
    return random.Random(seed)


def code_line(rng: random.Random, indent: int = 4) -> str:
    a, b, c = rng.sample(WORDS, 3)
    kind = rng.randrange(5)
    pad = " " * indent
    if kind == 0:
        return f"{pad}{a}_{b} = build_{c}(options[\"{a}\"], retries={rng.randrange(1, 9)})"
    if kind == 1:
        return f"{pad}if {a}.{b}_count > {rng.randrange(10, 999)}:  # guard the {c} path"
    if kind == 2:
        return f"{pad}self.{a}.append({b}_{c}(key=\"{a}-{rng.randrange(100, 999)}\"))"
    if kind == 3:
        return f"{pad}return {a}_{b}.merge({c}, strict={rng.choice(['True', 'False'])})"
    return f"{pad}log.debug(\"{a} {b} ready: %s\", {c}_id)"


def code_file(rng: random.Random, lines: int, planted: dict[int, str] | None = None) -> str:
    """A Python-looking file of `lines` lines; `planted` puts given text at given 1-based lines."""
    planted = planted or {}
    out: list[str] = []
    for n in range(1, lines + 1):
        if n in planted:
            out.append(planted[n])
        elif n % 25 == 1:
            out.append(f"def {rng.choice(WORDS)}_{rng.choice(WORDS)}_{n}(options, log):")
        else:
            out.append(code_line(rng))
    return "\n".join(out) + "\n"


def log_lines(rng: random.Random, lines: int, planted: dict[int, str] | None = None) -> str:
    planted = planted or {}
    out = []
    for n in range(1, lines + 1):
        if n in planted:
            out.append(planted[n])
            continue
        a, b = rng.sample(WORDS, 2)
        level = rng.choice(["INFO", "INFO", "INFO", "DEBUG", "WARN"])
        out.append(f"02:{n // 60 % 60:02d}:{n % 60:02d} {level} [{a}] {b} step {rng.randrange(1000, 9999)} ok in {rng.randrange(3, 900)}ms")
    return "\n".join(out) + "\n"
