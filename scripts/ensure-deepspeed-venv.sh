#!/usr/bin/env bash
# Prints the path of a venv holding DeepSpeed's own memory estimators (PyPI deepspeed, CPU only), the oracle of
# the ZeRO accounting in src/core/gpu/sharding.ts. Built once into a cache outside the clone keyed by the
# DeepSpeed and torch versions. torch goes in first and pinned: the CPU wheel of 2.13.0 lies on this machine's
# disk, and a bare torch (or deepspeed's own unpinned requirement) would pull a multi-GB CUDA build.
# DS_BUILD_OPS=0 keeps DeepSpeed from compiling its CUDA/C++ ops; the estimators are plain Python.
set -euo pipefail
DS_VERSION="${RFT_DEEPSPEED_VERSION:-0.19.8}"
TORCH_VERSION="2.13.0"
CACHE="${RFT_CACHE:-$HOME/.cache/remote-finetune}"
venv="$CACHE/deepspeed-$DS_VERSION-torch$TORCH_VERSION"
if [ ! -f "$venv/.complete" ]; then
  mkdir -p "$CACHE"
  log="$venv.log"
  echo "building $venv (one time, log in $log)" >&2
  exec 9>"$CACHE/.deepspeed.lock"; flock 9
  if [ ! -f "$venv/.complete" ]; then
    rm -rf "$venv"
    { python3 -m venv "$venv" &&
      "$venv/bin/pip" install -q --disable-pip-version-check "torch==$TORCH_VERSION" &&
      DS_BUILD_OPS=0 "$venv/bin/pip" install -q --disable-pip-version-check "deepspeed==$DS_VERSION" "torch==$TORCH_VERSION" &&
      "$venv/bin/python" -c 'import deepspeed.runtime.zero.stage3, deepspeed.runtime.zero.stage_1_and_2'; } > "$log" 2>&1 \
      || { echo "installing deepspeed $DS_VERSION (torch $TORCH_VERSION, CPU) failed; tail of $log:" >&2; tail -20 "$log" >&2; exit 1; }
    touch "$venv/.complete"
  fi
fi
echo "$venv"
