"""one_blas_thread: BLAS runs on one thread inside, the caller's setting comes back after."""

from __future__ import annotations

import threading

import numpy  # noqa: F401  (loads the BLAS library that threadpoolctl looks for)
from threadpoolctl import threadpool_info, threadpool_limits

from compaction_eval.stats.blas import one_blas_thread


def blas_threads() -> list[int]:
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


def test_one_thread_inside_and_the_callers_setting_after_even_when_nested():
    with threadpool_limits(limits=2, user_api="blas"):  # what a caller chose (2 cores here)
        before = blas_threads()
        assert before and before == [2] * len(before)
        with one_blas_thread():
            assert blas_threads() == [1] * len(before)
            with one_blas_thread():
                assert blas_threads() == [1] * len(before)
            assert blas_threads() == [1] * len(before)  # the inner exit does not restore early
        assert blas_threads() == before


def test_a_thread_leaving_does_not_restore_while_another_is_inside():
    def visit():
        with one_blas_thread():
            pass

    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads()
        with one_blas_thread():
            worker = threading.Thread(target=visit)
            worker.start()
            worker.join()  # another thread came and went while this one is inside
            assert blas_threads() == [1] * len(before)
        assert blas_threads() == before


def test_a_blas_library_loaded_after_the_first_use_is_limited_too():
    """scipy and scikit-learn bring their own OpenBLAS; it must be limited once it is loaded."""
    import json
    import subprocess
    import sys

    code = (
        "import json, numpy\n"
        "from threadpoolctl import threadpool_info, threadpool_limits\n"
        "from compaction_eval.stats.blas import one_blas_thread\n"
        "with one_blas_thread(): pass\n"  # the first use sees numpy's library only
        "import scipy.linalg, sklearn.linear_model\n"
        "with threadpool_limits(limits=2, user_api='blas'):\n"
        "    with one_blas_thread():\n"
        "        print(json.dumps([lib['num_threads'] for lib in threadpool_info() if lib['user_api'] == 'blas']))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    threads = json.loads(out)
    assert len(threads) >= 1 and threads == [1] * len(threads)
