"""Large transient buffers in their own mappings, so a long run's freed memory goes back.

glibc's malloc serves a request of 128 kB or more with its own `mmap`, returned to the system
when freed, but raises that threshold to the size of every such block freed (up to 32 MB).
A recall run frees large buffers all the time (a rendered prompt, a sample's JSON, inspect's
log flushes), so after its first samples they all land in the main heap; the small
long-lived objects allocated between them (cache entries, inspect's per-sample scores) pin
that heap, and freed space below them is never returned. At 3,000 samples 120-140 MB of the
heap was free but still resident: most of what the run grew by after its first few hundred
samples. A fixed threshold (glibc's documented default, 128 kB) turns the adjustment off.
"""

from __future__ import annotations

import ctypes
import functools

M_MMAP_THRESHOLD = -3
"""mallopt's parameter number (glibc's malloc.h)."""
MMAP_THRESHOLD = 128 * 1024


@functools.cache
def fix_mmap_threshold() -> bool:
    """Fix glibc's mmap threshold at 128 kB for the rest of the process (see the module
    docstring); True when it was set. Elsewhere (macOS, musl) nothing happens: False."""
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library the interpreter runs on
    except (OSError, AttributeError):  # not glibc
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD))


TRIM_EVERY = 256
"""Samples between two `trim_now_and_then` trims: a trim costs milliseconds."""
_calls = 0


def trim_now_and_then(every: int = TRIM_EVERY) -> bool:
    """Every `every`-th call, give the pages of glibc's free heap back to the system
    (`malloc_trim`); True when it trimmed. Called once per sample by the recall scorer.

    A fixed mmap threshold keeps large buffers out of the heap, but the small objects of
    finished samples (inspect starts every planned sample at once: about 15 kB each of
    waiting tasks at the start of a run) are freed between long-lived ones, and glibc only
    returns free memory at the top of its heap by itself: at 3,000 samples of a
    10,000-sample run, 116 MB of it was free but resident. Elsewhere (macOS, musl): nothing.
    """
    global _calls
    _calls += 1
    if _calls % every:
        return False
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return False
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    trim(0)
    return True
