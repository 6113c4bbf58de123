"""`python -m compaction_eval`: the command line."""

import sys

from compaction_eval.cli.main import main

sys.exit(main())
