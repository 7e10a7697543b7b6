#!/usr/bin/env bash
# Prints the path of a venv holding Google's own Cloud Storage client (PyPI google-cloud-storage, what the runner
# reads and writes gs:// with on a host) and a GCS emulator written by others (PyPI gcp-storage-emulator), built
# once into a cache outside the clone keyed by their versions and Python's. The runner's gs:// tests start the
# emulator from it and run the runner's storage commands with its python, STORAGE_EMULATOR_HOST pointing there.
set -euo pipefail
GCS_VERSION="${RFT_GCS_VERSION:-3.17.1}"
EMU_VERSION="${RFT_GCS_EMULATOR_VERSION:-2026.7.19}"
CACHE="${RFT_CACHE:-$HOME/.cache/remote-finetune}"
key=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
venv="$CACHE/gcs-$GCS_VERSION-emulator-$EMU_VERSION-py$key"
if [ ! -f "$venv/.complete" ]; then
  mkdir -p "$CACHE"
  log="$venv.log"
  echo "building $venv (one time, log in $log)" >&2
  exec 9>"$CACHE/.gcs.lock"; flock 9
  if [ ! -f "$venv/.complete" ]; then
    rm -rf "$venv"
    { python3 -m venv "$venv" &&
      "$venv/bin/pip" install -q --disable-pip-version-check "google-cloud-storage==$GCS_VERSION" "gcp-storage-emulator==$EMU_VERSION"; } > "$log" 2>&1 \
      || { echo "installing google-cloud-storage $GCS_VERSION / gcp-storage-emulator $EMU_VERSION failed; tail of $log:" >&2; tail -20 "$log" >&2; exit 1; }
    touch "$venv/.complete"
  fi
fi
echo "$venv"
