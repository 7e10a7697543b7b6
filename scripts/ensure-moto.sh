#!/usr/bin/env bash
# Prints the path of a venv holding moto's server (PyPI moto[server], an implementation of AWS's APIs
# written by others) and AWS's own CLI (PyPI awscli, what the runner uploads checkpoints with on a host),
# built once into a cache outside the clone keyed by their versions and Python's. The providers suite
# starts `moto_server -H 127.0.0.1 -p <port>` from it and points the AWS SDK at it; the runner's
# checkpoint-upload test puts its bin/aws on PATH with AWS_ENDPOINT_URL at the same server.
set -euo pipefail
MOTO_VERSION="${RFT_MOTO_VERSION:-5.2.5}"
AWSCLI_VERSION="${RFT_AWSCLI_VERSION:-1.46.3}"
CACHE="${RFT_CACHE:-$HOME/.cache/remote-finetune}"
key=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
venv="$CACHE/moto-$MOTO_VERSION-awscli-$AWSCLI_VERSION-py$key"
if [ ! -f "$venv/.complete" ]; then
  mkdir -p "$CACHE"
  log="$venv.log"
  echo "building $venv (one time, log in $log)" >&2
  exec 9>"$CACHE/.moto.lock"; flock 9
  if [ ! -f "$venv/.complete" ]; then
    rm -rf "$venv"
    { python3 -m venv "$venv" &&
      "$venv/bin/pip" install -q --disable-pip-version-check "moto[server]==$MOTO_VERSION" "awscli==$AWSCLI_VERSION"; } > "$log" 2>&1 \
      || { echo "installing moto $MOTO_VERSION failed; tail of $log:" >&2; tail -20 "$log" >&2; exit 1; }
    touch "$venv/.complete"
  fi
fi
echo "$venv"
