"""The built-in trainer's entry by file path: `python /…/python-runner/remote_finetune_entry.py train --run-dir D`.

The trainer (and each accelerate or torchrun rank) works in the synced workspace, where relative paths in the
spec resolve. `python -m remote_finetune` there would put that folder first on sys.path, ahead of PYTHONPATH,
on Python 3.10 always and on 3.11+ whenever PYTHONSAFEPATH is unset or empty: a repository's own
`remote_finetune/` would run in place of the trainer, with the tokens in its environment. A script never puts
the working folder on sys.path; this one puts its own folder, which holds the runner's package, first.
"""

import os
import sys

_RUNNER_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [_RUNNER_DIR] + [p for p in sys.path if p not in ("", ".", os.getcwd(), _RUNNER_DIR)]

from remote_finetune.__main__ import main  # noqa: E402 - only once sys.path is ours

if __name__ == "__main__":
    sys.exit(main())
