"""One BLAS thread for the scorer's many small matrix products.

numpy's OpenBLAS starts one thread per core and, after each product, lets them spin waiting
for the next one. The scorer multiplies a few dozen fact vectors by a few dozen summary
units per sample: too little work to share, so the spinning threads only burn CPU (on the
default recall run, about 15 of 45 CPU-seconds on two cores) and take it from the thread
doing the work.

A product may differ from the multi-threaded one in its last bits (2e-16 on a cosine; the
partial sums are split differently); the verdicts compare similarities with thresholds
and results round them to 4 decimals, and the default run's results.json is identical.
On one thread the scores no longer depend on how many cores the machine has.

The limit is scoped (the caller's own BLAS settings come back afterwards) and safe to
nest or enter from several threads: the first entrant sets it, the last one out restores it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_lock = threading.Lock()
_depth = 0
_limiter: Any = None


def _controller() -> Any:
    # A fresh look each time (0.1 ms): threadpoolctl sees only the BLAS libraries loaded so
    # far, and scipy or scikit-learn may load a second one after the first call.
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the block with BLAS limited to one thread.

    >>> import numpy as np
    >>> with one_blas_thread():
    ...     float((np.ones((2, 3)) @ np.ones((3, 2)))[0, 0])
    3.0
    """
    global _depth, _limiter
    with _lock:
        if _depth == 0:
            _limiter = _controller().limit(limits=1, user_api="blas")
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                _limiter.restore_original_limits()
                _limiter = None
