// The host's half of a sync (sync.ts), as shell command lines: reading its state, unpacking archive streams into
// a staging dir, and applying the ops list and manifest at the end. Every path is shell-quoted.
import { basename } from 'node:path';
import { shellQuote } from './quote';
import { PY_UNPACK } from './packFormat';

/** Where the manifest lives: beside the synced dir, so the synced tree stays byte-identical to the workspace. */
export function manifestPathFor(remoteDir: string): string {
  const i = remoteDir.lastIndexOf('/');
  return `${remoteDir.slice(0, i)}/.${remoteDir.slice(i + 1)}.rft-manifest.json`;
}

// Applies the ops list: deletes first (a file may be replaced by a directory of the same name), then renames
// from the staging dir, creating parent dirs. One implementation, in Python: every host that runs the runner
// has python3, while Perl is missing from minimal RHEL/Amazon Linux images (a Perl twin was kept once for its
// startup time, a few ms per sync, and was never exercised by a test).
const PY_APPLY = `import os,sys
stage,dest,lst=sys.argv[1:4]; parts=open(lst,'rb').read().split(b'\\0')
for op,p in zip(parts[0::2],parts[1::2]):
  p=os.fsdecode(p)
  if op==b'D':
    try: os.unlink(os.path.join(dest,p))
    except FileNotFoundError: pass
    d=os.path.dirname(p)
    while d:
      try: os.rmdir(os.path.join(dest,d))
      except OSError: break
      d=os.path.dirname(d)
  elif op==b'R':
    os.makedirs(os.path.dirname(os.path.join(dest,p)),exist_ok=True); os.replace(os.path.join(stage,'f',p),os.path.join(dest,p))`;

/** Extracts the archive on stdin (packFormat.ts) into `stage`. */
export function extractCommand(stage: string): string {
  return `python3 -I -S -c ${shellQuote(PY_UNPACK)} ${shellQuote(stage)}`;
}

/**
 * An extra extractor, stream `k` of a sync: it leaves its shell's pid in the stage, then `.rft-x<k>.ok` when its
 * unpacker succeeded or `.rft-x<k>.fail` when not, for the apply command to wait on (waitForExtractors).
 */
export function extractorCommand(stage: string, k: number): string {
  const mark = (what: string): string => shellQuote(`${stage}/.rft-x${k}.${what}`);
  return `set -e; mkdir -p ${shellQuote(stage)}; echo $$ > ${mark('pid')}; { ${extractCommand(stage)}; } && : > ${mark('ok')} || { : > ${mark('fail')}; exit 1; }`;
}

/**
 * Waits, on the host, for the extractors the archive's `.rft-wait` names (space-separated stream numbers) to
 * finish. The client sends the ops list and manifest once every stream's bytes are on their way, instead of a
 * round trip later when each extractor's exit status is back: on a 40 ms link that was 40-55 ms of every sync.
 * A stream has failed when it says so, or when its shell is gone without saying it succeeded. Every stream is
 * waited for before anything is decided (one still extracting would write into a stage being removed); then
 * with any failure the stage is removed and nothing is applied. Polled every 5 ms (GNU and BusyBox sleep take
 * fractions; a sleep that does not falls back to whole seconds).
 */
function waitForExtractors(stage: string): string {
  const q = shellQuote;
  const at = (what: string): string => `${q(`${stage}/.rft-x`)}"$rft_k"${q(`.${what}`)}`;
  return (
    `if [ -f ${q(`${stage}/.rft-wait`)} ]; then rft_bad=; for rft_k in $(cat ${q(`${stage}/.rft-wait`)}); do ` +
    `case $rft_k in ''|*[!0-9]*) echo "bad stream list in the archive" >&2; rm -rf ${q(stage)}; exit 1;; esac; rft_n=0; ` +
    `while [ ! -e ${at('ok')} ] && [ ! -e ${at('fail')} ]; do ` +
    `rft_p=$(cat ${at('pid')} 2>/dev/null || true); ` +
    `if [ -n "$rft_p" ] && ! kill -0 "$rft_p" 2>/dev/null; then break; fi; ` +
    `rft_n=$((rft_n+1)); if [ $rft_n -gt 12000 ]; then break; fi; ` +
    `sleep 0.005 2>/dev/null || sleep 1; done; ` +
    `[ -e ${at('ok')} ] || rft_bad="$rft_bad $rft_k"; done; ` +
    `if [ -n "$rft_bad" ]; then echo "sync streams$rft_bad did not extract" >&2; rm -rf ${q(stage)}; exit 1; fi; fi; `
  );
}

export function applyCommand(dest: string, stage: string, manifest: string): string {
  const q = shellQuote;
  const ops = q(`${stage}/.rft-ops`);
  // A first sync renames the whole staged tree into place at once; later ones rename file by file.
  return (
    `set -e; mkdir -p ${q(stage)}; ${extractCommand(stage)}; ${waitForExtractors(stage)}` +
    // An empty archive means there was nothing to do.
    `if [ ! -f ${q(`${stage}/.rft-manifest.json`)} ]; then rm -rf ${q(stage)}; exit 0; fi; ` +
    `if [ ! -e ${q(dest)} ] && [ -d ${q(`${stage}/f`)} ]; then mv ${q(`${stage}/f`)} ${q(dest)}; ` +
    `else mkdir -p ${q(dest)}; python3 -c ${q(PY_APPLY)} ${q(stage)} ${q(dest)} ${ops}; fi; ` +
    `mv -f ${q(`${stage}/.rft-manifest.json`)} ${q(manifest)}; rm -rf ${q(stage)}`
  );
}

/**
 * Prints the manifest (if any), a NUL, then each file's size, mtime and path under `remoteDir`, NUL-separated.
 * A sync cut off by a dropped connection leaves its staging dir (the target itself is untouched); those older
 * than an hour are removed here. A live sync's stage is minutes old at most.
 */
export function stateCommand(remoteDir: string): string {
  const parent = remoteDir.slice(0, remoteDir.lastIndexOf('/')) || '/';
  return (
    `M=${shellQuote(manifestPathFor(remoteDir))}; D=${shellQuote(remoteDir)}; ` +
    `find ${shellQuote(parent)} -maxdepth 1 -name ${shellQuote(`.${basename(remoteDir).replace(/[[\]*?\\]/g, '\\$&')}.rft-stage-*`)} -mmin +60 -exec rm -rf {} + 2>/dev/null; ` +
    `if [ -f "$M" ]; then cat "$M"; fi; printf '\\0'; if [ -d "$D" ]; then cd "$D" && find . \\( -type f -o -type l \\) -printf '%s %T@ %P\\0'; fi`
  );
}
