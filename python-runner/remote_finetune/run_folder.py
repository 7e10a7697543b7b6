"""The run folder, ~/.remote-finetune/runs/<run id>/, and the runner root above it: the name of every file the
runner reads or writes there. The one reader of the run's events.jsonl is events.read_events.

The extension names the same files (its run-folder module under src/core/runs, and the wrapper in
src/core/ssh/detachedJob.ts); a name changes on both sides or not at all. No other runner module spells a name of
this folder: tests/test_run_folder.py greps the package for them.
"""

import os

# Written by the extension before the run starts.
SPEC = "spec.json"
ENV = "env"  # 0600: the run's secrets and settings (envfile.py)
CONTROL_KEY = "control.key"  # 0600, read once and removed by the runner (control_key.py)
LAUNCH_RECORD = "launch.json"  # the extension launched this instance (launch_record.py)
WRAPPER = "wrapper.sh"
COMMAND = "command.sh"
BOOTSTRAP_RECORD = "bootstrap.json"  # command.sh keeps what `bootstrap` chose (the Python with CUDA torch)

# Written by the wrapper (src/core/ssh/detachedJob.ts) around the runner.
PID = "pid"
STARTED_AT = "started_at"
EXIT_CODE = "exit_code"
HEARTBEAT = "heartbeat"

# Written by the runner.
OUTPUT_LOG = "output.log"  # append-only, the run's stdout and stderr together
EVENTS = "events.jsonl"
GPU_CSV = "gpu.csv"
GPU_PROCS_CSV = "gpu_procs.csv"
RUNNER_PID = "runner.pid"
TRAIN_PGID = "train.pgid"
CALLBACK_MARKER = ".callback_active"  # our TrainerCallback runs: printed metric dicts are not parsed twice
STEP_PROGRESS = "step_progress"  # the trainer's step, rewritten in place for the stall watch
MEASURED_RANK = "measured-rank%d.json"  # one per rank: its peak memory and first step
MEASURED_RANK_GLOB = "measured-rank*.json"
STAGED = "staged.json"  # remote data the bootstrap copied to the host
WANDB_RUN_ID = "wandb_run_id"
PIP_FREEZE = "pip-freeze.txt"
TRAINING_ARGS = "training_args.json"
TENSORBOARD_DIR = "tensorboard"

# Files a restart of the run must not find from the run before it (boot_resume.py; the extension's relaunch
# removes the same ones).
STALE_AT_RESTART = (PID, EXIT_CODE, HEARTBEAT, STARTED_AT, TRAIN_PGID, RUNNER_PID)

# The runner root, ~/.remote-finetune/.
RUNS_DIR = "runs"
ROOT_HEARTBEAT = HEARTBEAT  # the extension's own, while it follows any run on this host
WATCHDOG_PID = "watchdog.pid"
WATCHDOG_LOG = "watchdog.log"
BOOT_RESUME_LOG = "boot-resume.log"
HOST_LAUNCH_RECORD = "launched-instance.json"
LEGACY_PROVISIONED_FLAG = "provisioned"
QUEUE_SLOTS_DIR = "slots"
QUEUE_DIR = "queue"
MLRUNS_DIR = "mlruns"


def path(run_dir: str, name: str) -> str:
    return os.path.join(run_dir, name)
