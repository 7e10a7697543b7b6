#!/usr/bin/env bash
# Issue 14 in ONE command on a lent GPU machine (a lease is 15 minutes in all, one command at most 10):
#
#   bash bench/gpu/device_run.sh [SECONDS]      default 540: everything ends by then, results under $OUT
#   DRY=1 bash bench/gpu/device_run.sh 300      the same steps on the CPU here (tiny shape, nvidia-smi stand-in)
#
# Where pip works, first: python3 scripts/pack_gpu_wheels.py --python-version 3.12 --bnb-cuda 130 \
#   --skip torch,transformers,peft,accelerate,numpy,pandas,pyarrow,hf-xet   (then a pyarrow>=24 wheel beside them,
#   only used where the machine's own is older than datasets 5 needs), and carry .gpu-wheels.
#
# 1. the run venv with the packed wheels (bench/gpu/install_wheels.py);
# 2. real nvidia-smi captures with the GPU idle (capture_smi.sh idle);
# 3. item 4, alone on the GPU: the runner against a plain Trainer script, A B A B, while capture_smi.sh busy
#    records nvidia-smi during training;
# 4. item 1: three lanes of vram_measure.py at once, each its own models (one GPU of 139 GiB holds all three:
#    the cases were chosen so the estimates of any three together stay under 100 GiB). torch's peaks are each
#    process's own; step times and the whole-GPU nvidia-smi peak of these records include the other lanes,
#    and every record names its lane. Each lane stops starting cases when the time is nearly up.
# On 2026-11-26 an H200 took 150 s for steps 1-3 (wheels, captures, two A/B pairs) and about 25 s a case (1B)
# to 40 s (7-8B) with three lanes; give it 540 s in a call of 575 when the lease allows.
# Files back ($OUT takes 8): a/ b/ c/ vram-*.json, lane-*.log, captures.tgz, device-run.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
T0=$(date +%s)
SECS=${1:-540}
END=$((T0 + SECS))
export PYTHONUNBUFFERED=1
OUTD=${OUT:-$PWD/.test-output/device-run}
mkdir -p "$OUTD"
exec > >(tee -a "$OUTD/device-run.log") 2>&1
WORK=${RFT_GPU_WORK:-/tmp/rft-gpu}
RES=$WORK/results
CAP=$WORK/captures
mkdir -p "$RES" "$CAP"
say() { echo "device-run +$(($(date +%s) - T0))s: $*"; }
left() { echo $((END - $(date +%s))); }
pack_captures() { tar -czf "$OUTD/captures.tgz" -C "$(dirname "$CAP")" "$(basename "$CAP")" 2>/dev/null; }

DRYARG=()
if [ "${DRY:-0}" = 1 ]; then
  DRYARG=(--cpu-dry-run)
  py=$(bash scripts/ensure-training-venv.sh hf5-torch2.6plus)/bin/python || exit 2
  export PATH="$PWD/test/support/standins:$PATH"
  A="tiny-llama/lora-bf16/seq64/b2/gc-on,tiny-llama/full/seq64/b1/gc-off"
  B="tiny-llama/lora-bf16/seq128/b1/gc-off"
  C="tiny-llama/full/seq64/b2/gc-on"
else
  say "$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -n 1); $(nproc) cores"
  py=$(python3 bench/gpu/install_wheels.py --wheels .gpu-wheels 2>&1 | tee /dev/stderr | grep '^RFT_VENV_PYTHON ' | cut -d' ' -f2-)
  if [ -z "$py" ]; then
    # pip refused the set (a requirement the image meets with another version than the lock's): install the packed
    # wheels without their dependency checks, keeping the image's own pyarrow and huggingface_hub, and see what imports.
    # Or the bootstrap found no interpreter with torch: then the image's own python3 takes them (the machine is thrown away).
    py=$(command -v python3)
    say "the run venv could not be built; installing the packed wheels into $py"
    "$py" -m pip install -q --disable-pip-version-check --no-index --find-links .gpu-wheels -r .gpu-wheels/requirements-cp312.txt ||
      # shellcheck disable=SC2046
      "$py" -m pip install -q --disable-pip-version-check --no-index --no-deps $(ls .gpu-wheels/*.whl | grep -v -e pyarrow- -e huggingface_hub-) || exit 2
  fi
  "$py" -c "import torch, transformers, peft, trl, datasets, accelerate, bitsandbytes as b; print(' '.join('%s %s' % (m.__name__, m.__version__) for m in (torch, transformers, peft, trl, datasets, accelerate, b)))" ||
    say "the venv does not import every training library (see above); QLoRA cases are left out where bitsandbytes is missing"
  A="llama-3.2-1b/lora-bf16/seq512/b4/gc-on,llama-3.2-1b/qlora/seq512/b4/gc-on,llama-3.2-1b/full/seq512/b4/gc-on,\
llama-3.2-1b/lora-bf16/seq2048/b4/gc-off,llama-3.2-1b/qlora/seq2048/b1/gc-off,llama-3.2-1b/full/seq2048/b1/gc-off,\
llama-3.2-1b/qlora/seq2048/b4/gc-on,llama-3.2-1b/full/seq2048/b4/gc-on,llama-3.2-1b/lora-bf16/seq512/b1/gc-off,\
qwen2.5-3b/qlora/seq2048/b4/gc-off,qwen2.5-3b/lora-bf16/seq512/b1/gc-on,qwen2.5-3b/full/seq512/b1/gc-on,\
qwen2.5-3b/lora-bf16/seq2048/b4/gc-on,qwen2.5-3b/qlora/seq512/b1/gc-on"
  B="llama-3-8b/qlora/seq512/b1/gc-on,llama-3-8b/qlora/seq2048/b4/gc-on,llama-3-8b/lora-bf16/seq2048/b1/gc-off,\
llama-3-8b/lora-bf16/seq512/b4/gc-on,llama-3-8b/qlora/seq2048/b1/gc-off,llama-3-8b/lora-bf16/seq2048/b4/gc-on,\
llama-3-8b/qlora/seq512/b4/gc-off"
  C="mistral-7b/qlora/seq2048/b4/gc-on,mistral-7b/lora-bf16/seq512/b1/gc-off,mistral-7b/qlora/seq512/b1/gc-off,\
mistral-7b/lora-bf16/seq2048/b4/gc-on,llama-2-7b/qlora/seq512/b1/gc-on,llama-2-7b/lora-bf16/seq2048/b1/gc-on,\
llama-2-7b/qlora/seq2048/b4/gc-off"
fi
[ -n "$py" ] || exit 2

say "idle captures"
bash bench/gpu/capture_smi.sh idle "$CAP" || say "idle capture failed"
pack_captures

say "item 4: runner vs plain Trainer, alone on the GPU ($(left) s left)"
bash bench/gpu/capture_smi.sh busy "$CAP" 150 "$WORK/a/home/.remote-finetune/runs/baseline-runner-0/events.jsonl" &
capture=$!
mkdir -p "$OUTD/a"
OUT="$OUTD/a" "$py" bench/gpu/vram_measure.py "${DRYARG[@]}" --python "$py" --work "$WORK/a" --out-dir "$RES/a" --baseline-only \
  --baseline-pairs 2 --case-timeout 200 >"$OUTD/lane-a.log" 2>&1 || say "baseline failed (lane-a.log)"
tail -n 4 "$OUTD/lane-a.log"
# The capture has had the whole baseline to see a process; one still waiting would only hold up the lanes.
kill $capture 2>/dev/null
wait $capture || say "busy capture failed or was stopped"
for f in gpu.csv gpu_procs.csv; do
  cp "$WORK/a/home/.remote-finetune/runs/baseline-runner-0/$f" "$CAP/runner_$f" 2>/dev/null
done
pack_captures

lane() { # lane NAME CASES: one vram_measure.py, stopping in time for the files to come back
  local name=$1 cases=$2 budget
  budget=$(($(left) - 25))
  mkdir -p "$OUTD/$name"
  OUT="$OUTD/$name" "$py" bench/gpu/vram_measure.py "${DRYARG[@]}" --python "$py" --work "$WORK/$name" --out-dir "$RES/$name" \
    --resume --lane "$name" --cases "$cases" --budget-s "$budget" --first-case-s 90 --case-timeout 200 >>"$OUTD/lane-$name.log" 2>&1
  say "lane $name ended (exit $?): $(tail -n 1 "$OUTD/lane-$name.log")"
}
# --resume on a fresh folder starts a new file; lane a's holds the baseline already.
say "item 1: three lanes ($(left) s left)"
lane a "$A" &
pa=$!
lane b "$B" &
pb=$!
lane c "$C" &
pc=$!
# A case that overruns its estimate is cut at the deadline (every file is written after each case), so the files
# come back before the command's own limit.
(sleep "$(left)"; pkill -f bench/gpu/vram_measure.py; pkill -f "remote_finetune run") >/dev/null 2>&1 &
timer=$!
wait $pa $pb $pc
pkill -P $timer 2>/dev/null
kill $timer 2>/dev/null
pack_captures
say "done; files in $OUTD: $(cd "$OUTD" && find . -type f | sort | tr '\n' ' ')"
