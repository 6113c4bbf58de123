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
