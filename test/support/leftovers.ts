// Processes the suites start and must stop again, recognised by where they keep their state: every test
// sshd, code-server, Chromium, watchdog and TensorBoard lives in a folder under the temp dir. A stray one is a
// leak (a code-server or Chromium eats memory for the rest of the run; a stray watchdog polls for 30 minutes; a
// TensorBoard started by "Open TensorBoard" on a test host serves until killed).
import { readdirSync, readFileSync } from 'node:fs';

export type LeftoverKind = 'watchdog' | 'tensorboard' | 'sshd' | 'code-server' | 'chromium';

export interface Leftover {
  readonly pid: number;
  readonly kind: LeftoverKind;
  /** The folder that ties it to a test (watchdog --root, tensorboard --logdir, sshd -f, --user-data-dir). */
  readonly dir: string;
}

function optionValue(argv: readonly string[], name: string): string | undefined {
  const i = argv.indexOf(name);
  if (i >= 0) return argv[i + 1];
  const eq = argv.find((a) => a.startsWith(`${name}=`));
  return eq?.slice(name.length + 1);
}

/** What kind of test process an argv is, and its folder; undefined for anything else. */
export function classify(raw: readonly string[]): { kind: LeftoverKind; dir: string } | undefined {
  // sshd sets its process title to one string ("sshd: /usr/sbin/sshd -D -f … [listener] 0 of 10-100 startups").
  const argv = raw.length === 1 && /^sshd(-session)?: /.test(raw[0]!) ? raw[0]!.split(' ').slice(1) : raw;
  const exe = argv[0] ?? '';
  const m = argv.indexOf('remote_finetune');
  if (m >= 0 && argv[m + 1] === 'watchdog') return { kind: 'watchdog', dir: optionValue(argv, '--root') ?? '' };
  const tb = argv.indexOf('tensorboard.main');
  if (tb > 0 && argv[tb - 1] === '-m') {
    const d = optionValue(argv, '--logdir');
    return d ? { kind: 'tensorboard', dir: d } : undefined;
  }
  // sshd -D -f <dir>/sshd_config (and its per-connection children, which keep the argv in their title)
  if (/(^|\/)sshd(-session)?$/.test(exe)) {
    const f = optionValue(argv, '-f');
    return f ? { kind: 'sshd', dir: f.replace(/\/[^/]*$/, '') } : undefined;
  }
  if (argv.some((a) => a.endsWith('code-server/out/node/entry.js'))) {
    const d = optionValue(argv, '--user-data-dir');
    return d ? { kind: 'code-server', dir: d } : undefined;
  }
  if (/(^|\/)chrom(e|ium)$/.test(exe)) {
    const d = optionValue(argv, '--user-data-dir');
    return d ? { kind: 'chromium', dir: d } : undefined;
  }
  return undefined;
}

/** Live test processes whose folder lies under `under` (a watchdog with no --root counts when `under` is ''). */
export function leftoverProcesses(under: string): Leftover[] {
  const prefix = under.endsWith('/') ? under : `${under}/`;
  const found: Leftover[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${name}/cmdline`, 'utf8')
        .split('\0')
        .filter((a, i, all) => a !== '' || i < all.length - 1);
    } catch {
      continue;
    }
    const c = classify(argv);
    if (c && (c.dir === under || c.dir.startsWith(prefix))) found.push({ pid: Number(name), ...c });
  }
  return found;
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^State:\s*Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}

/** SIGTERM, then SIGKILL after 3 s, to each pid; resolves when all are gone. */
export async function stopPids(pids: readonly number[]): Promise<void> {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      /* gone */
    }
  }
  const deadline = Date.now() + 3000;
  while (Date.now() < deadline && pids.some(alive)) await new Promise((r) => setTimeout(r, 50));
  for (const pid of pids.filter(alive)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
}
