"""A clone without ../shared: the tests that touch real data, run in a subprocess with
COMPACTION_EVAL_NO_SHARED=1 (conftest then treats ../shared/data as absent), pass or skip
with a reason. Running the whole suite twice would double CI time; these files are the ones
that read real traces."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import ROOT

REAL_DATA_TESTS = ["tests/corpus/test_importers.py", "tests/corpus/test_lint.py", "tests/corpus/test_drafting.py", "tests/gate/test_compare.py",
                   "tests/corpus/test_importers_real.py"]


def test_real_data_tests_pass_without_the_shared_folder():
    env = {**os.environ, "COMPACTION_EVAL_NO_SHARED": "1"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-o", "addopts=", "-q", "-x", "-p", "no:cacheprovider", *REAL_DATA_TESTS],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout and " skipped" in proc.stdout
