#!/usr/bin/env bash
# `npm test`: every suite in turn, each one's summary printed, one total at the end.
# A suite that fails does not stop the others; the exit code is non-zero if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
# System programs first (OpenSSH, Chromium, …): installed here as root with apt-get/dnf, else one command is
# printed and nothing runs (exit 2).
node scripts/preflight.mjs test || exit $?
OUT=.test-output/suites
rm -rf "$OUT"; mkdir -p "$OUT"

has_script() { node -e "process.exit(require('./package.json').scripts[process.argv[1]] ? 0 : 1)" "$1"; }

suites=(typecheck lint test:unit test:runner test:training test:integration test:providers test:panels test:vscode test:e2e test:leftovers bench:stale)
failed_suites=()
for s in "${suites[@]}"; do
  if ! has_script "$s"; then echo "== $s: not defined, skipped =="; continue; fi
  echo; echo "==================== npm run $s ===================="
  start=$(date +%s)
  npm run -s "$s" > >(tee "$OUT/${s//:/_}.log") 2>&1
  rc=$?
  echo "== $s: exit $rc in $(( $(date +%s) - start )) s =="
  [ $rc -eq 0 ] || failed_suites+=("$s")
done

if [ ${#failed_suites[@]} -gt 0 ]; then
  echo; echo "==================== failures ===================="
  node scripts/test-failures.mjs "$OUT" "${failed_suites[@]}"
  # A machine short of disk or memory fails tests far from the cause: the state it ended in, in one line each.
  echo "-- disk and memory at the end --"
  df -h "${TMPDIR:-/tmp}" . "$HOME" 2>/dev/null | awk 'NR == 1 || !seen[$1]++'
  free -m 2>/dev/null | head -2
fi
echo; echo "==================== summary ===================="
node scripts/test-summary.mjs "$OUT"
if [ ${#failed_suites[@]} -gt 0 ]; then
  echo "failed suites: ${failed_suites[*]}"
  exit 1
fi
echo "all suites passed"
