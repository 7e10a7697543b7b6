#!/usr/bin/env bash
# `npm run test:training`: the built-in trainer against the real Hugging Face stack on CPU, once per lock file
# (the newest line and the oldest supported one). Each lock gets a venv cached outside the clone, keyed by the
# lock's hash and the torch version, so CI builds it once. torch is the CPU build of TORCH_VERSION (pip takes
# it from the machine's local wheel; a bare `torch` would pull a multi-GB CUDA build).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
LOCKS="${RFT_TRAINING_LOCKS:-hf5-torch2.6plus hf4-torch2.2to2.5}"
OUT=.test-output/training
mkdir -p "$OUT"

ensure_venv() { bash scripts/ensure-training-venv.sh "$1"; }

# The GPU harnesses (bench/gpu/device_run*.sh) build their venv from the newest lock only, so their CPU dry runs
# are run there; every module that exercises the libraries runs on both locks.
GPU_HARNESS="test_device_run_33 test_device_run_34 test_gpu_smoke test_gpu_vram"
leave_out() {
  case "$1" in
    hf5-*) echo "" ;;
    *) echo "$GPU_HARNESS: the GPU harnesses run with the newest lock's venv (bench/gpu/device_run*.sh), and their dry runs with it" ;;
  esac
}

total_pass=0; total_fail=0; summaries=(); rc=0
for name in $LOCKS; do
  if ! venv=$(ensure_venv "$name"); then total_fail=$((total_fail + 1)); rc=1; summaries+=("$name: no venv"); continue; fi
  log="$OUT/$name.log"
  start=$(date +%s)
  (cd python-runner && RFT_TRAINING_LEAVE_OUT="$(leave_out "$name")" HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 \
    "$venv/bin/python" -m tests_training) > "$log" 2>&1
  code=$?
  line=$(grep '^RFT_TRAINING ' "$log" | tail -1 | cut -d' ' -f2-)
  if [ -z "$line" ]; then
    echo "training ($name): the suite did not finish (exit $code); tail of $log:"; tail -40 "$log"
    total_fail=$((total_fail + 1)); rc=1; continue
  fi
  grep -E '^(lane [0-9]+:|test_|skipped |slowest |module-seconds |FAIL:|ERROR:)' "$log" | sed 's/^/  /'
  [ $code -eq 0 ] || { echo "  -- failures in $log:"; sed -n '/^=\{20,\}$/,/^RFT_TRAINING/p' "$log" | tail -120; rc=1; }
  summary=$(node -e '
    const r = JSON.parse(process.argv[1]); const v = r.versions;
    const pass = r.ran - r.failed - r.skipped;
    console.log(`${pass}\t${r.failed}\t${r.skipped}\ttorch ${v.torch}, transformers ${v.transformers}, peft ${v.peft}, trl ${v.trl}, datasets ${v.datasets}, accelerate ${v.accelerate}, bitsandbytes ${v.bitsandbytes}`);' "$line")
  IFS=$'\t' read -r p f s vers <<< "$summary"
  echo "training ($name, $(( $(date +%s) - start )) s): $p passed, $f failed, $s skipped ($vers)"
  total_pass=$((total_pass + p)); total_fail=$((total_fail + f)); summaries+=("$vers")
done
joined=$(printf '%s | ' "${summaries[@]}"); joined=${joined% | }
echo "training: $total_pass passed, $total_fail failed ($joined)"
exit $rc
