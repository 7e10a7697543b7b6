// The one set-up step before `npm test` and `npm run demo`: find the system programs they need and, as root
// with apt-get or dnf, install what is missing; otherwise print the one command that would, and exit 2.
// Plain Node with no dependencies, so it runs on a machine that has only Node (before or after `npm ci`).
//
//   node scripts/preflight.mjs test|demo
//
// Exit codes: 0 ready (optional programs may still be missing: their tests say why they skip), 2 a required
// program is missing and was not installed here (the message names the command), never a stack trace.
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// Where sshd lives on Debian, Fedora and macOS: sbin directories are often not on a normal user's PATH.
const SBIN = ['/usr/sbin', '/usr/local/sbin', '/sbin'];
const CODE_SERVER_VERSION = process.env.CODE_SERVER_VERSION ?? '4.100.3';

/**
 * What the suites and the demo need. `for` names the commands that need it; `optional` ones only enable
 * tests that otherwise skip with their reason (other login shells, BusyBox tools). Package names per
 * manager; `null` means the platform has it built in or there is no package (the hint says what to do).
 */
export const REQUIREMENTS = [
  {
    id: 'sshd',
    why: 'the loopback SSH host (OpenSSH server)',
    for: ['test', 'demo'],
    check: { program: 'sshd', env: 'SSHD_PATH', sbin: true },
    packages: { apt: 'openssh-server', dnf: 'openssh-server', brew: null },
    hint: { brew: 'macOS: System Settings → General → Sharing → Remote Login' },
  },
  {
    id: 'ssh',
    why: 'the OpenSSH client (ssh, scp, ssh-keygen)',
    for: ['test', 'demo'],
    check: { programs: ['ssh', 'scp', 'ssh-keygen'] },
    packages: { apt: 'openssh-client', dnf: 'openssh-clients', brew: 'openssh' },
  },
  {
    id: 'rsync',
    why: 'the reference for sync benchmarks and tests',
    for: ['test'],
    check: { program: 'rsync' },
    packages: { apt: 'rsync', dnf: 'rsync', brew: 'rsync' },
  },
  {
    id: 'tmux',
    why: 'detached runs on the loopback host',
    for: ['test', 'demo'],
    check: { program: 'tmux' },
    packages: { apt: 'tmux', dnf: 'tmux', brew: 'tmux' },
  },
  {
    id: 'procps',
    why: 'ps and pgrep on the loopback host',
    for: ['test', 'demo'],
    check: { programs: ['ps', 'pgrep'] },
    packages: { apt: 'procps', dnf: 'procps-ng', brew: null },
  },
  { id: 'git', why: 'workspace fixtures with a git index', for: ['test'], check: { program: 'git' }, packages: { apt: 'git', dnf: 'git', brew: 'git' } },
  {
    id: 'chromium',
    why: 'the browser that drives VS Code and the panels',
    for: ['test'],
    check: { program: 'chromium', env: 'CHROMIUM_PATH', fixed: '/usr/bin/chromium' },
    packages: { apt: 'chromium', dnf: 'chromium', brew: null },
    hint: { brew: 'set CHROMIUM_PATH to a Chromium or Chrome binary' },
  },
  {
    id: 'ripgrep',
    why: "VS Code's search, bundled into the cached code-server",
    for: ['test', 'demo'],
    check: { program: 'rg' },
    packages: { apt: 'ripgrep', dnf: 'ripgrep', brew: 'ripgrep' },
  },
  {
    id: 'python',
    why: 'Python 3 with venv for the runner and its training venv',
    for: ['test', 'demo'],
    check: { python: true },
    packages: { apt: ['python3', 'python3-venv'], dnf: 'python3', brew: 'python' },
  },
  // code-server's native modules (kerberos, keytar, native-keymap) are rebuilt once when it is cached.
  {
    id: 'code-server-build',
    why: "headers and compilers to build code-server's native modules (once, then cached)",
    for: ['test', 'demo'],
    check: { codeServerBuild: true },
    packages: {
      apt: ['libkrb5-dev', 'libsecret-1-dev', 'libx11-dev', 'libxkbfile-dev', 'make', 'g++'],
      dnf: ['krb5-devel', 'libsecret-devel', 'libX11-devel', 'libxkbfile-devel', 'make', 'gcc-c++'],
      brew: null,
    },
  },
  {
    id: 'busybox',
    why: 'BusyBox sh and dd for the quoting and striped-transfer tests',
    for: ['test'],
    optional: true,
    check: { program: 'busybox' },
    packages: { apt: 'busybox', dnf: 'busybox', brew: null },
  },
  {
    id: 'shells',
    why: 'login shells other than sh (zsh, fish, tcsh) for the command-quoting tests',
    for: ['test'],
    optional: true,
    check: { programs: ['zsh', 'fish', 'tcsh'] },
    packages: { apt: ['zsh', 'fish', 'tcsh'], dnf: ['zsh', 'fish', 'tcsh'], brew: ['zsh', 'fish', 'tcsh'] },
  },
];

const HEADERS = ['/usr/include/krb5.h', '/usr/include/libsecret-1/libsecret/secret.h', '/usr/include/X11/Xlib.h', '/usr/include/X11/extensions/XKBfile.h'];

/** The first executable `name` on `path` (and the sbin directories when asked), or undefined. */
export function findProgram(name, path = process.env.PATH ?? '', extra = []) {
  for (const dir of [...path.split(delimiter).filter(Boolean), ...extra]) {
    const p = join(dir, name);
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      /* not here */
    }
  }
  return undefined;
}

/** Whether one requirement is met on this machine (`env` is the environment the suites will run with). */
export function isMet(req, env = process.env) {
  const c = req.check;
  const path = env.PATH ?? '';
  if (c.env && env[c.env]) return existsSync(env[c.env]);
  if (c.fixed && existsSync(c.fixed)) return true;
  if (c.program) return findProgram(c.program, path, c.sbin ? SBIN : []) !== undefined;
  if (c.programs) return c.programs.every((p) => findProgram(p, path) !== undefined);
  if (c.python) {
    const py = findProgram('python3', path);
    if (!py) return false;
    // Debian's python3 lacks ensurepip until python3-venv is installed, and `python3 -m venv` then fails.
    return spawnSync(py, ['-c', 'import venv, ensurepip'], { stdio: 'ignore', env }).status === 0;
  }
  if (c.codeServerBuild) {
    const cache = env.RFT_CACHE ?? join(env.HOME ?? homedir(), '.cache/remote-finetune');
    if (existsSync(join(cache, `code-server-${CODE_SERVER_VERSION}`, '.complete'))) return true; // already built
    if (!findProgram('make', path) || !findProgram('g++', path)) return false;
    return process.platform !== 'linux' || HEADERS.every((h) => existsSync(h));
  }
  throw new Error(`requirement ${req.id} has no check`);
}

/** The package manager this machine offers on PATH, if any we know. */
export function detectManager(path = process.env.PATH ?? '', platform = process.platform) {
  if (platform === 'darwin') return findProgram('brew', path) ? 'brew' : undefined;
  if (findProgram('apt-get', path)) return 'apt';
  if (findProgram('dnf', path)) return 'dnf';
  return undefined;
}

function packagesOf(reqs, manager) {
  const out = [];
  for (const r of reqs) {
    const p = manager ? r.packages[manager] : null;
    for (const name of p == null ? [] : Array.isArray(p) ? p : [p]) if (!out.includes(name)) out.push(name);
  }
  return out;
}

/** The install command for `packages` with `manager`, as argv lists (as root) and as one line to print. */
export function installCommand(manager, packages, root) {
  const sudo = root ? '' : 'sudo ';
  switch (manager) {
    case 'apt':
      return {
        argv: [
          ['apt-get', 'update', '-qq'],
          ['apt-get', 'install', '-y', '-qq', '--no-install-recommends', ...packages],
        ],
        line: `${sudo}apt-get update && ${sudo}apt-get install -y --no-install-recommends ${packages.join(' ')}`,
      };
    case 'dnf':
      return { argv: [['dnf', 'install', '-y', ...packages]], line: `${sudo}dnf install -y ${packages.join(' ')}` };
    case 'brew':
      return { argv: undefined, line: `brew install ${packages.join(' ')}` };
    default:
      return { argv: undefined, line: undefined };
  }
}

/**
 * What to do, from the facts alone (a pure function, so the decision is testable on any machine):
 * `ok` (nothing required is missing), `install` (root with apt/dnf: run `argv`, then check again), or `print`
 * (tell the user the one command, and exit 2 when something required is missing).
 */
export function decide({ missing, manager, root }) {
  const required = missing.filter((r) => !r.optional);
  const optional = missing.filter((r) => r.optional);
  if (missing.length === 0) return { action: 'ok', required, optional };
  const packages = packagesOf(missing, manager);
  const cmd = installCommand(manager, packages, root);
  const hints = missing.map((r) => r.hint?.[manager]).filter(Boolean);
  if (root && cmd.argv && packages.length > 0) return { action: 'install', argv: cmd.argv, packages, required, optional, hints };
  return { action: required.length > 0 ? 'print' : 'ok', line: packages.length > 0 ? cmd.line : undefined, packages, required, optional, hints };
}

function describe(reqs) {
  return reqs.map((r) => `  - ${r.id}: ${r.why}`).join('\n');
}

function explain(plan, manager) {
  const lines = [];
  if (plan.required.length > 0) lines.push(`preflight: these are needed and missing:\n${describe(plan.required)}`);
  if (plan.optional.length > 0) lines.push(`preflight: optional, missing (the tests that need them skip and say why):\n${describe(plan.optional)}`);
  if (plan.line) lines.push(`Install them with:\n  ${plan.line}`);
  else if (!manager) lines.push("No apt-get, dnf or brew was found: install the programs above with your system's package manager.");
  for (const h of plan.hints ?? []) lines.push(`  (${h})`);
  return lines.join('\n');
}

/** Runs the preflight for `purpose`; returns the exit code. */
export function main(purpose, env = process.env, log = console.log) {
  if (purpose !== 'test' && purpose !== 'demo') {
    log('usage: node scripts/preflight.mjs test|demo');
    return 2;
  }
  const reqs = REQUIREMENTS.filter((r) => r.for.includes(purpose));
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  const manager = detectManager(env.PATH, process.platform);
  let missing = reqs.filter((r) => !isMet(r, env));
  let plan = decide({ missing, manager, root });
  if (plan.action === 'install') {
    log(`preflight: installing ${plan.packages.join(' ')} (as root, with ${manager})`);
    for (const argv of plan.argv) {
      // The package manager's progress is kept back and shown only when it fails: hundreds of unpack lines
      // would bury the test output.
      const r = spawnSync(argv[0], argv.slice(1), {
        stdio: ['ignore', 'pipe', 'pipe'],
        encoding: 'utf8',
        maxBuffer: 64 << 20,
        env: { ...env, DEBIAN_FRONTEND: 'noninteractive' },
      });
      if (r.status !== 0) {
        const out = `${r.stdout ?? ''}${r.stderr ?? ''}`.trim().split('\n').slice(-20).join('\n');
        log(`preflight: \`${argv.join(' ')}\` failed (${r.error ? r.error.message : `exit ${r.status}`})${out ? `:\n${out}` : ''}`);
        log(explain(decide({ missing, manager, root: false }), manager));
        return 2;
      }
    }
    missing = reqs.filter((r) => !isMet(r, env));
    plan = decide({ missing, manager, root: false });
    if (plan.required.length > 0) {
      log(`preflight: still missing after the install:\n${explain(plan, manager)}`);
      return 2;
    }
  } else if (missing.length > 0) {
    log(explain(plan, manager));
    if (plan.action === 'print') return 2;
  }
  // sshd refuses to start without its privilege separation directory, which lives on a tmpfs on Debian.
  if (root && process.platform === 'linux' && !existsSync('/run/sshd')) {
    try {
      mkdirSync('/run/sshd', { mode: 0o755 });
    } catch {
      /* sshd will say */
    }
  }
  log(`preflight (${purpose}): ready${plan.optional.length ? ` (${plan.optional.length} optional missing)` : ''}`);
  return 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  try {
    process.exit(main(process.argv[2]));
  } catch (e) {
    console.log(`preflight: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(2);
  }
}
