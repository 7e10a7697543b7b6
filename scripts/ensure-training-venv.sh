#!/usr/bin/env bash
# Prints the path of a venv holding the CPU build of torch and one of the runner's lock files
# (python-runner/remote_finetune/requirements/locks/<name>.txt), building it once into a cache outside
# the clone keyed by the lock's content, the torch version and the Python version. Used by test:training,
# the e2e suite (the loopback "GPU host" gets it as RFT_PYTHON) and the demo's built-in trainer example.
set -euo pipefail
cd "$(dirname "$0")/.."
NAME="${1:-hf5-torch2.6plus}"
LOCK="python-runner/remote_finetune/requirements/locks/$NAME.txt"
[ -f "$LOCK" ] || { echo "no lock file $LOCK" >&2; exit 2; }
# The tracking extras (TensorBoard, MLflow) go in too, pinned by the lock's constraints, so the tests use the real packages.
REQS="python-runner/remote_finetune/requirements"
TRACKING="$REQS/locks/tracking/$NAME.txt"
[ -f "$TRACKING" ] || { echo "no tracking constraints $TRACKING" >&2; exit 2; }
CACHE="${RFT_CACHE:-$HOME/.cache/remote-finetune}"
TORCH_VERSION="${RFT_TORCH_VERSION:-2.13.0}"
key=$( { cat "$LOCK" "$TRACKING" "$REQS/tensorboard.txt" "$REQS/mlflow.txt"; echo "torch==$TORCH_VERSION"; python3 --version; } | sha256sum | cut -c1-16)
venv="$CACHE/venv-$NAME-$key"
if [ ! -f "$venv/.complete" ]; then
  mkdir -p "$CACHE"
  log="$CACHE/venv-$NAME-$key.log"
  echo "building $venv (one time, log in $log)" >&2
  # One builder at a time: the e2e suite and test:training may both ask for it.
  exec 9>"$CACHE/.venv-$NAME.lock"; flock 9
  if [ ! -f "$venv/.complete" ]; then
    rm -rf "$venv"
    { python3 -m venv "$venv" &&
      "$venv/bin/pip" install -q --disable-pip-version-check "torch==$TORCH_VERSION" &&
      "$venv/bin/pip" install -q --disable-pip-version-check -r "$LOCK" -r "$REQS/tensorboard.txt" -r "$REQS/mlflow.txt" -c "$TRACKING"; } > "$log" 2>&1 \
      || { echo "building the venv for $NAME failed; tail of $log:" >&2; tail -20 "$log" >&2; exit 1; }
    touch "$venv/.complete"
  fi
fi
echo "$venv"
