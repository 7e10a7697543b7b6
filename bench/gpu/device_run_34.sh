#!/usr/bin/env bash
# Issue 34's GPU throughput benchmark in ONE command on a lent GPU machine (bench/gpu/throughput.py through issue 33's
# installs and case runner, each case alone on the GPU):
#
#   bash bench/gpu/device_run_34.sh [SECONDS]     default 540: everything ends by then, results under $OUT
#   DRY=1 bash bench/gpu/device_run_34.sh 240     the same code path on the CPU here: tiny shapes of the same
#                                                 architecture, the nvidia-smi STAND-IN of test/support/standins
#
# The device tool's `run` (kind left out: an H100 or an H200; the file names the GPU and driver):
#   command:   bash bench/gpu/device_run_34.sh 540
#   carry:     [".gpu-wheels"]
#   timeout_s: 580
# Back under $OUT: throughput-<gpu>-<date>.json and device-run-33.log (issue 33's shell writes the log). Commit the JSON
# into bench/gpu/ and run `node --import tsx scripts/gpu-throughput-table.ts` for the README's table.
# A second call with RFT_34_ANCHOR_FROM=1 runs the LLaMA-Factory recipe alone when the first call's deadline left it out.
#
# One 540 s call holds about three cases (2026-11-28 on an H200: 87-114 s each, 50-70 s of installs first), so a lease
# of 15 minutes is best spent as two calls on the same warm machine, each with what the other leaves out:
#   RFT_34_VARIANTS=builtin-default,trl-sft bash bench/gpu/device_run_34.sh 420
#   RFT_34_VARIANTS=unsloth,builtin-fast RFT_33_UNSLOTH_NODEPS=1 bash bench/gpu/device_run_34.sh 420
# (RFT_34_VARIANTS: a comma list of builtin-default, builtin-fast, trl-sft, unsloth; RFT_33_UNSLOTH_NODEPS=1 installs
# Unsloth's wheels without its pins, with which it imported on the H200.)
#
# Before that call, where pip works (here), once, as for issue 33 (the wheels the GPU image lacks, and liger-kernel
# and Unsloth's wheels in .gpu-wheels/extras-33):
#   python3 scripts/pack_gpu_wheels.py --python-version 3.12 --bnb-cuda 130 \
#     --skip torch,transformers,peft,accelerate,numpy,pandas,pyarrow,hf-xet
#   bash bench/gpu/device_run_33.sh --pack-extras
set -uo pipefail
cd "$(dirname "$0")/../.."
export RFT_GPU_DRIVER=bench/gpu/throughput.py RFT_33_PLAN=anchors
export OUT=${OUT:-$PWD/.test-output/device-run-34$([ "${DRY:-0}" = 1 ] && echo -dry)}
export RFT_GPU_WORK=${RFT_GPU_WORK:-$([ "${DRY:-0}" = 1 ] && echo /tmp/rft-gpu-34-dry || echo /tmp/rft-gpu-34)}
exec bash bench/gpu/device_run_33.sh "${1:-540}"
