#!/usr/bin/env bash
# Issue 33 in ONE command on a lent GPU machine, one deadline for everything (a lease is about 15 minutes of device
# time in all, each start included; one command at most 10):
#
#   bash bench/gpu/device_run_33.sh [SECONDS]     default 540: everything ends by then, results under $OUT
#   DRY=1 bash bench/gpu/device_run_33.sh 240     the same steps on the CPU here: tiny shapes of the same
#                                                 architectures, the nvidia-smi STAND-IN of test/support/standins
#
# THE NEXT SESSION WITH A GPU makes exactly this call of the device tool's `run` (kind left out: an H100 or an H200,
# either gives the cost model a GPU point; the file names the GPU):
#   command:   bash bench/gpu/device_run_33.sh 540
#   carry:     [".gpu-wheels"]
#   timeout_s: 580
# then copies what comes back (throughput-<gpu>-<date>.json, holdout-vram-<gpu>-<date>.json, captures-33.tgz,
# device-run-33.log) into bench/gpu/, the captures into test/fixtures/nvidia-smi/real/ (with a SOURCES.md row naming
# GPU, driver and date, and their expected.json entries), and the figures into the README. It must NOT refit the VRAM
# estimate before the held-out errors are written down.
#
# Before that call, where pip works (here), once: the wheels the GPU image lacks (it has torch, transformers, peft,
# accelerate; not datasets, trl, bitsandbytes), into the git-ignored .gpu-wheels (about 9 MiB):
#   python3 scripts/pack_gpu_wheels.py --python-version 3.12 --bnb-cuda 130 \
#     --skip torch,transformers,peft,accelerate,numpy,pandas,pyarrow,hf-xet
# and this issue's extras beside them in .gpu-wheels/extras-33 (pack_gpu_wheels.py leaves sub-folders alone):
#   bash bench/gpu/device_run_33.sh --pack-extras
# (liger-kernel for the built-in fast path; unsloth without its desktop app, unsloth_zoo and the small dependencies
# Unsloth's pins add: about 26 MiB, 35 MiB with .gpu-wheels, under the 64 MiB a call carries. xformers is not packed: it is large and built for one torch, so Unsloth's strict offline install is expected to
# fail on it and is recorded as such (pip --dry-run, seconds); only when that passes, or with RFT_33_UNSLOTH_NODEPS=1,
# are the wheels installed into a folder of their own, and Unsloth runs only if it then imports.)
#
# Steps, each inside the deadline (a step that would end after it is not started; every file is written after each case):
# 1. the run venv with the packed wheels (bench/gpu/install_wheels.py), liger-kernel into it, and Unsloth's wheels tried
#    offline in a folder of their own (its pins want datasets<5 and trl<=1.15, the runner's lock has 5.2 and 1.16);
# 2. idle nvidia-smi captures (capture_smi.sh idle);
# 3. bench/gpu/issue33.py, one case at a time alone on the GPU: it first writes every held-out case with its estimate
#    from bench/gpu/holdout-estimates-33.json (committed before any GPU ran them; the dry run makes its own with
#    bench/gpu/holdoutEstimate.ts first), then runs the first anchor's variants, the first held-out model (Phi-3-mini,
#    with capture_smi.sh busy during its QLoRA paged-optimizer case), the second anchor, and the other held-out cases;
#    so a cut-short lease still has a figure for every item.
# Guesses for a 540 s call on an H200 (from 2026-11-26: 25-40 s a case, 47 s to build an 8B model): about 40 s of
# installs, 280 s for the six anchor cases, the rest for the held-out cases, grouped by model (Phi-3-mini first, Qwen2.5-14B
# last): likely not all eight of the issue's minimum in one call; those that do not fit are recorded as not run with the
# reason, and a second lease finishes them with RFT_33_PLAN=holdout RFT_33_HOLDOUT_FROM=<first case not run>. RFT_33_PLAN=anchors|holdout runs one part only
# (a second session can finish the held-out cases with RFT_33_PLAN=holdout).
# RFT_GPU_DRIVER replaces issue33.py with another driver taking the same arguments (bench/gpu/device_run_34.sh).
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
EXTRAS=.gpu-wheels/extras-33

if [ "${1:-}" = --pack-extras ]; then
  mkdir -p "$EXTRAS/unsloth-deps"
  plat=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64
        --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64)
  dl() { python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: --python-version 3.12 \
           --implementation cp --abi cp312 --abi abi3 --abi none "${plat[@]}" -d "$@"; }
  dl "$EXTRAS" liger-kernel==0.8.5 unsloth==2026.10.9 unsloth-zoo==2026.10.9 || exit 1
  for n in trl==1.15.0 datasets==4.3.0 tyro docstring-parser shtab typeguard hf_transfer torchao cut_cross_entropy msgspec json5 \
           structlog nest-asyncio diffusers pydantic pydantic-core annotated-types typing-inspection; do
    dl "$EXTRAS/unsloth-deps" "$n" || echo "pack-extras: $n not packed"
  done
  # Unsloth's wheel carries its desktop app (studio/: a web front end and its server, 25 of its 28 MiB), which training
  # never imports; without it the carry stays well under the 64 MiB a call may take. Its RECORD lines go too, so pip
  # installs the rest as any wheel (the kept files' hashes are unchanged).
  python3 - "$EXTRAS"/unsloth-2*.whl <<'EOF2'
import os, sys, zipfile
wheel = sys.argv[1]
drop = lambda name: name.startswith("studio/")
with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(wheel + ".tmp", "w", zipfile.ZIP_DEFLATED) as dst:
    for info in src.infolist():
        if drop(info.filename):
            continue
        data = src.read(info.filename)
        if info.filename.endswith(".dist-info/RECORD"):
            data = "".join(l for l in data.decode().splitlines(True) if not drop(l.split(",", 1)[0])).encode()
        dst.writestr(info, data)
before = os.path.getsize(wheel)
os.replace(wheel + ".tmp", wheel)
print("pack-extras: %s without studio/: %.1f MiB, was %.1f" % (os.path.basename(wheel), os.path.getsize(wheel) / 2 ** 20, before / 2 ** 20))
EOF2
  du -sh .gpu-wheels "$EXTRAS"
  exit 0
fi

T0=$(date +%s)
SECS=${1:-540}
END=$((T0 + SECS))
export PYTHONUNBUFFERED=1
DRY=${DRY:-0}
OUTD=${OUT:-$ROOT/.test-output/device-run-33$([ "$DRY" = 1 ] && echo -dry)}
mkdir -p "$OUTD"
export OUT=$OUTD  # harness.write_json copies every result file there (how the GPU machine hands files back)
exec > >(tee -a "$OUTD/device-run-33.log") 2>&1
say() { echo "device-run-33 +$(($(date +%s) - T0))s: $*"; }
left() { echo $((END - $(date +%s))); }

if [ "$DRY" = 1 ]; then
  WORK=${RFT_GPU_WORK:-/tmp/rft-gpu-33-dry}
else
  # Models go to RAM when /dev/shm has room for the largest (Qwen2.5-14B, 30 GB in bf16): the disk is 64 GiB, and
  # writing and reading 30 GB there took most of a case's time in the 2026-11-26 run.
  shm_free=$(df -Pk /dev/shm 2>/dev/null | awk 'NR==2 {print int($4 / 1048576)}')
  if [ "${shm_free:-0}" -ge 45 ]; then WORK=${RFT_GPU_WORK:-/dev/shm/rft-gpu-33}; else WORK=${RFT_GPU_WORK:-/tmp/rft-gpu-33}; fi
fi
export RFT_GPU_WORK=$WORK
CAP=$WORK/captures-33
mkdir -p "$WORK" "$CAP"
pack_captures() { tar -czf "$OUTD/captures-33.tgz" -C "$WORK" captures-33 2>/dev/null; }
UNSLOTH_STATUS=$WORK/unsloth-install.json

unsloth_try() { # unsloth_try PYTHON: Unsloth's packed wheels offline, beside (never into) PYTHON's venv; writes $UNSLOTH_STATUS
  # Its pins (datasets<5, trl<=1.15, xformers) differ from the runner's lock, so it gets a folder of its own that only its
  # case puts first on PYTHONPATH; torch, transformers and peft come from PYTHON's venv as for every other case.
  local vpy=$1 site=$WORK/unsloth-site strict="" strict_rc=0 nodeps="" imp="" ok=false
  if ! ls "$EXTRAS"/unsloth-2*.whl >/dev/null 2>&1; then
    printf '{"import_ok": false, "why": "not installable offline: no Unsloth wheels were packed (%s/unsloth-*.whl)"}\n' "$EXTRAS" >"$UNSLOTH_STATUS"
    return
  fi
  rm -rf "$site"
  local links=(--find-links "$EXTRAS" --find-links "$EXTRAS/unsloth-deps" --find-links .gpu-wheels)
  # The issue's test: would pip install it offline, with its dependencies, next to what the machine has?
  strict=$(timeout 60 "$vpy" -m pip install --dry-run --disable-pip-version-check --no-index "${links[@]}" unsloth unsloth_zoo 2>&1 | tail -n 4)
  strict_rc=$?
  if [ "$strict_rc" != 0 ] && [ "${RFT_33_UNSLOTH_NODEPS:-0}" != 1 ]; then
    # Not installable offline: recorded, and no lease time spent on an import that pip's resolver already refused.
    "$vpy" -c 'import json, sys; json.dump({"strict_install_ok": False, "strict_install_output": sys.argv[2].strip()[-600:], "import_ok": False,
      "site": None, "why": "not installable offline: pip --no-index with its dependencies: " + sys.argv[2].strip()[-400:]
      + " (a --no-deps install is tried only with RFT_33_UNSLOTH_NODEPS=1)"}, open(sys.argv[1], "w"), indent=1)' "$UNSLOTH_STATUS" "$strict"
    return
  fi
  # shellcheck disable=SC2046
  nodeps=$(timeout 90 "$vpy" -m pip install -q --disable-pip-version-check --no-index --no-deps --no-compile --target "$site" \
             $(ls "$EXTRAS"/unsloth*.whl "$EXTRAS"/unsloth-deps/*.whl) 2>&1 | tail -n 4)
  imp=$(cd /tmp && PYTHONPATH=$site HF_HUB_OFFLINE=1 timeout 60 "$vpy" -c "import unsloth; print('unsloth', unsloth.__version__)" 2>&1 | tail -n 3) && ok=true
  "$vpy" - "$UNSLOTH_STATUS" "$strict_rc" "$strict" "$nodeps" "$ok" "$imp" "$site" <<'EOF'
import json, sys
path, rc, strict, nodeps, ok, imp, site = sys.argv[1:]
ok = ok == "true"
why = None if ok else ("not installable offline: " + ("pip --no-index with its dependencies: %s; " % strict.strip()[-400:] if rc != "0" else "")
                       + "after a --no-deps install, import unsloth: %s" % imp.strip()[-400:])
json.dump({"strict_install_ok": rc == "0", "strict_install_output": strict.strip()[-600:], "nodeps_install_output": nodeps.strip()[-600:],
           "import_ok": ok, "import_output": imp.strip()[-600:], "site": site if ok else None, "why": why}, open(path, "w"), indent=1)
EOF
}

if [ "$DRY" = 1 ]; then
  py=$(bash scripts/ensure-training-venv.sh hf5-torch2.6plus)/bin/python || exit 2
  # STAND-IN for nvidia-smi (test/support/standins/nvidia-smi): no GPU here, its figures mean nothing.
  export PATH="$ROOT/test/support/standins:$PATH"
  DRYARG=(--cpu-dry-run)
  if [ "${DRY_UNSLOTH:-0}" = 1 ]; then unsloth_try "$py"; else
    echo '{"import_ok": false, "why": "dry run: the offline Unsloth install is tried only with DRY_UNSLOTH=1"}' >"$UNSLOTH_STATUS"; fi
else
  DRYARG=()
  say "$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -n 1); $(nproc) cores; work in $WORK"
  py=$(python3 bench/gpu/install_wheels.py --wheels .gpu-wheels 2>&1 | tee /dev/stderr | grep '^RFT_VENV_PYTHON ' | cut -d' ' -f2-)
  if [ -z "$py" ]; then
    py=$(command -v python3)
    say "the run venv could not be built; installing the packed wheels into $py"
    "$py" -m pip install -q --disable-pip-version-check --no-index --find-links .gpu-wheels -r .gpu-wheels/requirements-cp312.txt ||
      # shellcheck disable=SC2046
      "$py" -m pip install -q --disable-pip-version-check --no-index --no-deps $(ls .gpu-wheels/*.whl | grep -v -e pyarrow- -e huggingface_hub-) || exit 2
  fi
  if ls "$EXTRAS"/liger_kernel-*.whl >/dev/null 2>&1; then
    "$py" -m pip install -q --disable-pip-version-check --no-index --no-deps "$EXTRAS"/liger_kernel-*.whl || say "liger-kernel did not install"
  fi
  "$py" -c "import torch, transformers, peft, trl, datasets, accelerate, bitsandbytes as b; print(' '.join('%s %s' % (m.__name__, m.__version__) for m in (torch, transformers, peft, trl, datasets, accelerate, b)))" ||
    say "the venv does not import every training library (see above)"
  say "Unsloth, offline, in a venv of its own ($(left) s left)"
  unsloth_try "$py"
fi
[ -n "$py" ] || exit 2
say "unsloth: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("imports" if d["import_ok"] else d["why"][:300])' "$UNSLOTH_STATUS")"

say "idle captures"
bash bench/gpu/capture_smi.sh idle "$CAP" || say "idle capture failed"
pack_captures

EST=bench/gpu/holdout-estimates-33.json
if [ "$DRY" = 1 ] && [ "${RFT_33_PLAN:-all}" != anchors ]; then
  # The dry run's tiny cases are estimated here, now, by the extension's own estimator, before any of them runs.
  EST=$WORK/holdout-estimates-dry.json
  "$py" bench/gpu/issue33.py --cpu-dry-run --print-holdout-cases "$WORK/holdout-cases-dry.json" &&
    node --import tsx bench/gpu/holdoutEstimate.ts "$WORK/holdout-cases-dry.json" "$EST" || { say "the estimates could not be made"; exit 2; }
fi

say "issue33.py: first anchor, first held-out cases, second anchor, the other held-out cases ($(left) s left)"
# The files come back only if the command ends by itself: the driver gets the deadline less 25 s, and is stopped at it.
set -m
"$py" "${RFT_GPU_DRIVER:-bench/gpu/issue33.py}" "${DRYARG[@]}" --python "$py" --work "$WORK/w" --out-dir "$WORK/results" --deadline $((END - 25)) \
  --plan "${RFT_33_PLAN:-all}" --estimates "$EST" --captures "$CAP" --unsloth-status "$UNSLOTH_STATUS" &
driver=$!
set +m
(sleep $(($(left) - 15 > 1 ? $(left) - 15 : 1)); kill -TERM -- -"$driver" 2>/dev/null) &
timer=$!
wait "$driver"
rc=$?
pkill -P "$timer" 2>/dev/null
kill "$timer" 2>/dev/null
cp "$UNSLOTH_STATUS" "$CAP/" 2>/dev/null
pack_captures
say "done (issue33.py exit $rc); files in $OUTD: $(cd "$OUTD" && find . -type f | sort | tr '\n' ' ')"
exit $rc
