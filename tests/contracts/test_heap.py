"""Freed large buffers go back to the system once the mmap threshold is fixed (issue 25)."""

from __future__ import annotations

import ctypes
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

# What a long run does: after one large block is freed (glibc then raises its mmap
# threshold), large buffers are allocated with small long-lived objects between them, and
# the buffers are freed. The resident memory left behind, in MB.
PROGRAM = """
import sys
sys.path.insert(0, {src!r})
from compaction_eval.contracts.heap import fix_mmap_threshold
if {fixed}:
    assert fix_mmap_threshold()
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024
big = bytearray(8 << 20)
del big
before = rss()
buffers, pinned = [], []
for _ in range(400):
    buffers.append(bytearray(256 << 10))
    pinned.append(bytearray(1024))
del buffers
print(rss() - before)
"""


def left_resident(fixed: bool) -> float:
    out = subprocess.run([sys.executable, "-c", PROGRAM.format(src=str(SRC), fixed=fixed)],
                         capture_output=True, text=True, check=True)
    return float(out.stdout)


def glibc() -> bool:
    try:
        ctypes.CDLL(None).mallopt  # noqa: B018
    except AttributeError:
        return False
    return Path("/proc/self/status").is_file()


@pytest.mark.skipif(not glibc(), reason="glibc's malloc on Linux only")
def test_freed_large_buffers_are_returned_with_the_threshold_fixed():
    # 400 buffers of 256 kB are 100 MB: glibc's own adjustment keeps them resident
    assert left_resident(fixed=False) > 50
    assert left_resident(fixed=True) < 10


def test_fixing_the_threshold_is_harmless_where_it_cannot_be_done(monkeypatch):
    """Without glibc's `mallopt` (macOS, musl) nothing happens and False says so."""
    from compaction_eval.contracts import heap

    class NoMallopt:
        def __init__(self, name):
            pass

    monkeypatch.setattr(heap.ctypes, "CDLL", NoMallopt)
    heap.fix_mmap_threshold.cache_clear()
    try:
        assert heap.fix_mmap_threshold() is False
    finally:
        heap.fix_mmap_threshold.cache_clear()
