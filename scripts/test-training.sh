#!/usr/bin/env bash
# `npm run test:training`: the built-in trainer against the real Hugging Face stack on CPU, once per lock file
# (the newest line and the oldest supported one). Each lock gets a venv cached outside the clone, keyed by the
# lock's hash and the torch version, so CI builds it once. torch is the CPU build of TORCH_VERSION (pip takes
# it from the machine's local wheel; a bare `torch` would pull a multi-GB CUDA build).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
CACHE="${RFT_CACHE:-$HOME/.cache/remote-finetune}"
TORCH_VERSION="${RFT_TORCH_VERSION:-2.13.0}"
LOCKS="${RFT_TRAINING_LOCKS:-hf5-torch2.6plus hf4-torch2.2to2.5}"
OUT=.test-output/training
mkdir -p "$OUT" "$CACHE"

ensure_venv() { # lock file -> venv dir on stdout
  local lock=$1 key venv
  key=$( { cat "$lock"; echo "torch==$TORCH_VERSION"; python3 --version; } | sha256sum | cut -c1-16)
  venv="$CACHE/venv-$(basename "$lock" .txt)-$key"
  if [ ! -f "$venv/.complete" ]; then
    echo "building $venv (one time)" >&2
    rm -rf "$venv"
    { python3 -m venv "$venv" &&
      "$venv/bin/pip" install -q --disable-pip-version-check "torch==$TORCH_VERSION" &&
      "$venv/bin/pip" install -q --disable-pip-version-check -r "$lock"; } > "$OUT/venv-$(basename "$lock" .txt).log" 2>&1 \
      || { echo "venv for $lock failed; see $OUT/venv-$(basename "$lock" .txt).log" >&2; tail -20 "$OUT/venv-$(basename "$lock" .txt).log" >&2; return 1; }
    touch "$venv/.complete"
  fi
  echo "$venv"
}

total_pass=0; total_fail=0; summaries=(); rc=0
for name in $LOCKS; do
  lock="python-runner/remote_finetune/requirements/locks/$name.txt"
  if ! venv=$(ensure_venv "$lock"); then total_fail=$((total_fail + 1)); rc=1; summaries+=("$name: no venv"); continue; fi
  log="$OUT/$name.log"
  start=$(date +%s)
  (cd python-runner && HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 "$venv/bin/python" -m tests_training) > "$log" 2>&1
  code=$?
  line=$(grep '^RFT_TRAINING ' "$log" | tail -1 | cut -d' ' -f2-)
  if [ -z "$line" ]; then
    echo "training ($name): the suite did not finish (exit $code); tail of $log:"; tail -40 "$log"
    total_fail=$((total_fail + 1)); rc=1; continue
  fi
  grep -E '^(test_|skipped |FAIL:|ERROR:)' "$log" | sed 's/^/  /'
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
