#!/usr/bin/env bash
# `npm run smoke:gpu` / `npm run bench:gpu-vram`: the GPU deliverables of issues 13.5 and 14, one command each.
#
#   bash scripts/smoke-gpu.sh [smoke] [--cpu-dry-run] [smoke.py options]    QLoRA, BF16 LoRA, full: 10 steps each
#   bash scripts/smoke-gpu.sh vram [--cpu-dry-run] [vram_measure.py options] the VRAM matrix (in chunks: --chunk N)
#   bash scripts/smoke-gpu.sh pack [--python-version 3.11,3.12]            only download the wheels
#
# Where pip can download (this machine): packs into .gpu-wheels/ (git-ignored) the wheels a GPU machine without
# network lacks (datasets, trl, bitsandbytes and their dependencies at the hf5-torch2.6plus lock's pins), for the
# Python versions in --python-version / RFT_GPU_PYTHON_VERSIONS (default 3.11,3.12); with no GPU here it then says
# so in one line and exits 3. On the GPU machine (the repository with .gpu-wheels carried): builds the run venv as
# the runner's bootstrap does, installs the wheels with pip --no-index, and trains through `python -m remote_finetune
# run`; results go to bench/gpu/ and to $OUT when that is set.
# --cpu-dry-run: the same pipeline on a tiny shape on the CPU, in the training venv of the test suite
# (scripts/ensure-training-venv.sh; RFT_GPU_PYTHON overrides). With RFT_PYTHON set it first builds a venv on that
# interpreter and installs the packed wheels into it, as on the GPU machine.
set -uo pipefail
cd "$(dirname "$0")/.."

mode=smoke
case "${1:-}" in smoke|vram|pack) mode=$1; shift ;; esac
dry=0
for a in "$@"; do [ "$a" = "--cpu-dry-run" ] && dry=1; done
versions=()
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --python-version) versions+=("$2"); shift 2 ;;
    --python-version=*) versions+=("${1#*=}"); shift ;;
    *) args+=("$1"); shift ;;
  esac
done
PACK_VERSIONS="${versions[*]:-${RFT_GPU_PYTHON_VERSIONS:-3.11,3.12}}"
WHEELS=.gpu-wheels
script=bench/gpu/smoke.py; [ "$mode" = vram ] && script=bench/gpu/vram_measure.py

if [ "$mode" = pack ]; then
  exec python3 scripts/pack_gpu_wheels.py --dest "$WHEELS" --python-version "${PACK_VERSIONS// /,}" "${args[@]}"
fi

# Installs the packed wheels into a venv built on RFT_PYTHON or the interpreter the bootstrap picks; prints its python.
install_venv() {
  local out
  out=$(python3 bench/gpu/install_wheels.py --wheels "$WHEELS" 2>&1 | tee /dev/stderr | grep '^RFT_VENV_PYTHON ' | cut -d' ' -f2-)
  [ -n "$out" ] || return 1
  echo "$out"
}

if [ $dry -eq 1 ]; then
  if [ -n "${RFT_PYTHON:-}" ]; then
    py=$(install_venv) || { echo "smoke-gpu: installing the packed wheels onto $RFT_PYTHON failed (see above)" >&2; exit 2; }
  elif [ -n "${RFT_GPU_PYTHON:-}" ]; then
    py=$RFT_GPU_PYTHON
  else
    venv=$(bash scripts/ensure-training-venv.sh hf5-torch2.6plus) || exit 2
    py=$venv/bin/python
  fi
  exec "$py" "$script" "${args[@]}"
fi

probe=$(python3 bench/gpu/install_wheels.py --probe 2>/dev/null) || probe='{}'
field() { python3 -c 'import json,sys; v = json.loads(sys.argv[1] or "{}").get(sys.argv[2]); sys.stdout.write("" if v is None else str(v).lower() if isinstance(v, bool) else str(v))' "$probe" "$1"; }
cuda=$(field cuda)
if [ "$cuda" != "true" ]; then
  packed=""
  if python3 scripts/pack_gpu_wheels.py --dest "$WHEELS" --python-version "${PACK_VERSIONS// /,}" --check; then
    packed="already packed"
  elif python3 scripts/pack_gpu_wheels.py --dest "$WHEELS" --python-version "${PACK_VERSIONS// /,}" >&2; then
    packed="packed now"
  else
    packed="NOT packed (see above)"
  fi
  size=$(du -sm "$WHEELS" 2>/dev/null | cut -f1)
  why=$(field why); [ -n "$why" ] || why="torch $(field torch) at $(field python) sees none"
  cmd="bash scripts/smoke-gpu.sh"; [ "$mode" = vram ] && cmd="$cmd vram"
  echo "smoke-gpu: no CUDA GPU here ($why); wheels for Python ${PACK_VERSIONS// /,} $packed in $WHEELS (${size:-0} MiB): run \`$cmd\` on a GPU machine with $WHEELS carried, or add --cpu-dry-run to try it on the CPU"
  exit 3
fi
py=$(install_venv) || { echo "smoke-gpu: could not install the packed wheels (see above)" >&2; exit 2; }
exec "$py" "$script" "${args[@]}"
