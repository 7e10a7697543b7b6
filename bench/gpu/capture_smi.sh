#!/usr/bin/env bash
# Issue 14.3: real nvidia-smi output from a GPU machine, saved verbatim as parser fixtures.
#
#   bash bench/gpu/capture_smi.sh idle DIR            the GPU with nothing on it
#   bash bench/gpu/capture_smi.sh busy DIR [WAIT_S] [EVENTS]
#                         waits (default 120 s) until a process holds GPU memory, then captures while it trains;
#                         with EVENTS (a run's events.jsonl), until that run has logged a training step: on
#                         2026-11-26 the process test alone fired on a model being built and caught the GPU idle
#
# Each capture is the exact command the product runs where it runs one (the runner's sampler and per-process
# query, argv from python-runner/remote_finetune/gpu.py; the host probe of src/core/ssh/gpuProbe.ts), plus the
# forms a user's own tools print (`-q`, the banner, `--format=csv` with header and units). DIR/commands.txt says
# which command wrote which file, with its exit status; stderr is kept apart (FILE.stderr) so a file is exactly
# what the command printed on stdout.
set -uo pipefail
cd "$(dirname "$0")/../.."
mode=${1:?idle or busy}
dir=${2:?output folder}
wait_s=${3:-120}
events=${4:-}
mkdir -p "$dir"
smi=$(command -v nvidia-smi) || { echo "capture: no nvidia-smi on PATH" >&2; exit 3; }
py=python3
argv() { PYTHONPATH=python-runner "$py" -c "import sys, shlex; from remote_finetune import gpu; print(shlex.join(getattr(gpu, sys.argv[1])(*sys.argv[2:])))" "$@"; }
sampler=$(argv sampler_argv 200) || exit 2
apps=$(argv apps_argv) || exit 2
query=${sampler% -lms 200}
query_units=${query/--format=csv,noheader,nounits/--format=csv}
apps_units=${apps/--format=csv,noheader,nounits/--format=csv}
# The host probe's query (src/core/ssh/gpuProbe.ts PROBE_FIELDS).
probe="nvidia-smi --query-gpu=index,name,memory.total,driver_version,uuid --format=csv,noheader,nounits"

run() { # run FILE SECONDS COMMAND...: stdout to DIR/FILE, stderr apart, the command and its status logged
  local file=$1 secs=$2
  shift 2
  timeout "$secs" "$@" >"$dir/$file" 2>"$dir/$file.stderr"
  local rc=$?
  [ -s "$dir/$file.stderr" ] || rm -f "$dir/$file.stderr"
  printf '%s\t%s\texit %s\t%s\n' "$mode" "$file" "$rc" "$*" >>"$dir/commands.txt"
}

if [ "$mode" = busy ]; then
  start=$(date +%s)
  # --query-compute-apps prints nothing while no process holds GPU memory: poll it until one does.
  training() {
    if [ -n "$events" ]; then grep -q '"type": *"metrics"' "$events" 2>/dev/null; else [ -n "$($apps 2>/dev/null | tr -d '[:space:]')" ]; fi
  }
  until training; do
    if [ $(($(date +%s) - start)) -ge "$wait_s" ]; then
      echo "capture: no training ${events:+in $events }within $wait_s s" >&2
      exit 1
    fi
    sleep 0.2
  done
  [ -n "$events" ] || sleep 3 # past model loading, into the training steps
  # shellcheck disable=SC2086  # the argv strings are shlex-joined words without spaces inside
  {
    run busy_lms200_query.csv 4 $sampler
    run busy_query_csv-units.csv 20 $query_units
    run busy_apps_noheader-nounits.csv 20 $apps
    run busy_apps_csv-units.csv 20 $apps_units
    run busy_q.txt 30 "$smi" -q
    run busy_banner.txt 20 "$smi"
  }
  exit 0
fi

[ "$mode" = idle ] || { echo "capture: mode is idle or busy, not $mode" >&2; exit 2; }
# shellcheck disable=SC2086
{
  run idle_banner.txt 20 "$smi"
  run idle_version.txt 20 "$smi" --version
  run idle_list-gpus.txt 20 "$smi" -L
  run idle_probe_noheader-nounits.csv 20 $probe
  run idle_query_noheader-nounits.csv 20 $query
  run idle_query_csv-units.csv 20 $query_units
  run idle_apps_noheader-nounits.csv 20 $apps
  run idle_apps_csv-units.csv 20 $apps_units
  run idle_q.txt 30 "$smi" -q
}
