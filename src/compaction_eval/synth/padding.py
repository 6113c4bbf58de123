"""Padding: extra, fact-free tool round trips that make a family's story long.

Real sessions are mostly reading: whole modules, long logs, wide greps, test listings and
the same file read again. A `PaddingPlan` says how many tokens of such filler go before which
of the family's tool calls; the TraceBuilder writes them as it goes, so every index the family
gets back (facts, points) stays right. Where the filler goes (`profile`) moves the planted
facts: `front` pushes them late in the trace, `back` leaves them early, `middle` buries the
stretch between the two compaction points.

Filler never states a fact of the story; it uses the family's vocabulary so it reads like
the same code base.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from compaction_eval.synth.tooloutput import Vocab, python_module, test_names

PROFILES = ("uniform", "front", "back", "middle")
# Rough characters per token of code and logs (only used to size filler; traces are
# measured with compaction_eval.contracts.tokens afterwards).
CHARS_PER_TOKEN = 3.4


@dataclass(frozen=True)
class PaddingPlan:
    """Filler to insert before the family's tool calls.

    Args:
        target_tokens: the size the padded trace aims at (recorded in metadata).
        profile: one of PROFILES (recorded in metadata).
        chunks: call number (0-based, counting the family's calls only) -> token sizes of the
            filler round trips written just before that call.
        seed: the seed of the filler's own random stream.
    """

    target_tokens: int
    profile: str
    chunks: dict[int, tuple[int, ...]] = field(default_factory=dict)
    seed: str = ""

    def before_call(self, n: int) -> tuple[int, ...]:
        return self.chunks.get(n, ())

    def describe(self) -> dict[str, Any]:
        return {"target_tokens": self.target_tokens, "profile": self.profile,
                "filler_calls": sum(len(v) for v in self.chunks.values())}


def _weights(profile: str, n_calls: int) -> list[float]:
    """Relative chance that filler goes before call i (call 0 follows the request: none there)."""
    out = []
    for i in range(n_calls):
        x = i / max(1, n_calls - 1)
        if i == 0:
            out.append(0.0)
        elif profile == "front":
            out.append((1.0 - x) ** 2 + 0.05)
        elif profile == "back":
            out.append(x ** 2 + 0.05)
        elif profile == "middle":
            out.append(1.0 if 0.45 <= x <= 0.85 else 0.15)
        else:
            out.append(1.0)
    return out


def make_plan(key: str, n_calls: int, budget_tokens: int, target_tokens: int, profile: str) -> PaddingPlan | None:
    """A deterministic plan spreading about `budget_tokens` of filler over `n_calls` calls.

    Args:
        key: seeds the plan and the filler text (the trace id and seed).
        n_calls: how many tool calls the unpadded story makes.
        budget_tokens: filler to add; None is returned when it is not positive.
        target_tokens: recorded in the plan's metadata.
        profile: where the filler goes (PROFILES).
    """
    if profile not in PROFILES:
        raise ValueError(f"unknown padding profile {profile!r}")
    if budget_tokens <= 0 or n_calls < 2:
        return None
    rng = random.Random(f"{key}:padding-plan")
    sizes: list[int] = []
    while sum(sizes) < budget_tokens:
        r = rng.random()
        if r < 0.06 and budget_tokens - sum(sizes) > 40_000:
            sizes.append(rng.randint(15_000, 28_000))  # a huge module or a long log
        elif r < 0.35:
            sizes.append(rng.randint(5_000, 12_000))
        else:
            sizes.append(rng.randint(1_200, 5_000))
        # The last chunk takes only what is left, so the trace lands near its target.
        sizes[-1] = max(1_200, min(sizes[-1], budget_tokens - sum(sizes[:-1])))
    weights = _weights(profile, n_calls)
    chunks: dict[int, list[int]] = {}
    for size in sizes:
        at = rng.choices(range(n_calls), weights=weights)[0]
        chunks.setdefault(at, []).append(size)
    return PaddingPlan(target_tokens, profile, {k: tuple(v) for k, v in sorted(chunks.items())}, f"{key}:filler")


# --------------------------------------------------------------------------- filler


def _chars(tokens: int) -> int:
    return int(tokens * CHARS_PER_TOKEN)


def big_read(rng: random.Random, vocab: Vocab, tokens: int) -> tuple[str, str, dict[str, Any], str]:
    noun, other = rng.sample(vocab.nouns, 2)
    path = f"src/{vocab.package}/{noun}s/{other}_{rng.choice(('views', 'queries', 'serializers', 'handlers', 'storage'))}.py"
    lines = max(60, _chars(tokens) // 38)
    module = python_module(rng, path, vocab, docstring=f"{noun.capitalize()} {other} handling.", target_lines=lines)
    thought = rng.choice((
        f"Reading {path} in full to see how {noun}s flow through it before touching anything.",
        f"I have not looked at {path} yet; it is large, but the {other} handling there may matter.",
        f"Let me read {path} to rule it in or out.",
    ))
    return thought, "read_file", {"path": path}, module.numbered()


_LEVELS = ("INFO", "INFO", "INFO", "INFO", "DEBUG", "DEBUG", "WARNING")


def long_log(rng: random.Random, vocab: Vocab, tokens: int) -> tuple[str, str, dict[str, Any], str]:
    svc = rng.choice(("worker", "api", "scheduler", "consumer"))
    cmd = rng.choice((f"kubectl logs deploy/{vocab.package}-{svc} --since=6h",
                      f"tail -n 4000 /var/log/{vocab.package}/{svc}.log",
                      f"docker compose logs {svc} --no-color"))
    budget = int(_chars(tokens) * 0.78)  # log lines are denser in tokens than code
    out: list[str] = []
    used = 0
    h, m, s = rng.randint(0, 5), rng.randint(0, 59), rng.randint(0, 59)
    while used < budget:
        s += rng.randint(0, 3)
        m, s = m + s // 60, s % 60
        h, m = (h + m // 60) % 24, m % 60
        noun = rng.choice(vocab.nouns)
        level = rng.choice(_LEVELS)
        line = rng.choice((
            f"{vocab.package}.{noun}s processed {noun} id={rng.randint(10_000, 99_999)} in {rng.randint(2, 95)}ms",
            f"{vocab.package}.http GET /api/{noun}s/{rng.randint(1, 9999)} 200 {rng.randint(1, 80)}ms",
            f"{vocab.package}.db pool checkout waited {rng.randint(0, 40)}ms (size={rng.randint(5, 20)})",
            f"{vocab.package}.cache miss key={noun}:{rng.randint(1, 99999)}",
            f"{vocab.package}.{svc} heartbeat ok",
        ))
        text = f"2024-05-{rng.randint(10, 12):02d}T{h:02d}:{m:02d}:{s:02d}.{rng.randint(0, 999):03d}Z {level:<7} {line}"
        out.append(text)
        used += len(text) + 1
    thought = rng.choice((
        f"Checking the {svc} logs around the time of the problem for anything unusual.",
        f"The {svc} log may show what happened just before; pulling a long stretch of it.",
    ))
    return thought, "bash", {"command": cmd}, "\n".join(out)


def wide_grep(rng: random.Random, vocab: Vocab, tokens: int) -> tuple[str, str, dict[str, Any], str]:
    noun = rng.choice(vocab.nouns)
    budget = _chars(tokens)
    out: list[str] = []
    used = 0
    while used < budget:
        a, b = rng.sample(vocab.nouns, 2)
        line = rng.choice((f"    {noun} = self._{a}_{b}({noun}_id)", f"def {a}_{noun}({noun}: {rng.choice(vocab.classes)}) -> None:",
                           f"        return {noun}.{b}", f"    for {noun} in {a}s:", f"# TODO: {noun} {b} is computed twice"))
        text = f"src/{vocab.package}/{a}s/{b}.py:{rng.randint(1, 900)}:{line}"
        out.append(text)
        used += len(text) + 1
    thought = f"Where else is `{noun}` used? Grepping the whole tree."
    return thought, "grep", {"pattern": noun, "path": "src"}, "\n".join(out)


def test_listing(rng: random.Random, vocab: Vocab, tokens: int) -> tuple[str, str, dict[str, Any], str]:
    noun = rng.choice(vocab.nouns)
    budget = _chars(tokens)
    names = test_names(rng, vocab, max(10, budget // 70), prefix="test")
    out = [f"tests/{noun}s/test_{rng.choice(vocab.nouns)}.py::{n} PASSED{' ' * 4}[{100 * (i + 1) // len(names):>3}%]"
           for i, n in enumerate(names)]
    out.append(f"==================== {len(names)} passed in {rng.uniform(2, 40):.2f}s ====================")
    thought = f"Running the {noun} tests verbosely to see that area is untouched."
    return thought, "run_tests", {"target": f"tests/{noun}s", "args": "-v"}, "\n".join(out)


KINDS = (big_read, long_log, wide_grep, test_listing)


def filler(rng: random.Random, vocab: Vocab, tokens: int, earlier_reads: Sequence[tuple[dict[str, Any], str]]
           ) -> tuple[str, str, dict[str, Any], str]:
    """One filler round trip of about `tokens` tokens: (thought, tool, args, output).

    `earlier_reads` are (args, output) of read_file calls already in the trace: sometimes the
    agent reads one of them again, as real agents do after a long stretch.
    """
    # Only a file about the chunk's size, so the trace still lands near its target.
    fitting = [r for r in earlier_reads if len(r[1]) <= 1.5 * _chars(tokens)]
    if fitting and tokens < 12_000 and rng.random() < 0.18:
        args, output = rng.choice(fitting)
        return (f"I read {args['path']} earlier but it has scrolled far back; reading it again to check the exact lines.",
                "read_file", dict(args), output)
    if tokens >= 12_000:
        kind = rng.choice((big_read, long_log))
    else:
        kind = rng.choice(KINDS)
    return kind(rng, vocab, tokens)
