// sshd runs every exec'd command through the user's login shell ($SHELL -c "…"), and every command this
// extension sends is POSIX sh. On most GPU hosts the login shell is bash or dash and parses it as written; a
// user whose login shell is fish, csh/tcsh or zsh (which does not split unquoted variables and aborts on an
// unmatched glob) would get commands misparsed. One probe per connection tells which, and on those hosts each
// command is handed to /bin/sh in a form every shell passes through unchanged.
//
// The probe also catches a shell start-up file that prints to stdout for non-interactive commands (an `echo`
// at the top of ~/.bashrc): that text would be read as the start of every command's output (a manifest, a
// log's first bytes). scp and rsync break on such hosts too; here the user is told what to fix instead.
import type { Client, ClientChannel } from 'ssh2';
import { isPlainAbsolutePath } from './remoteHome';

export type LoginShell = 'posix' | 'other';

export interface ShellProbe {
  readonly shell: LoginShell;
  /** Text the shell printed before the command's own output; undefined when clean or not yet known. */
  readonly noise?: string;
  /** Whether the output said enough to tell (false: the probe did not parse, so cleanliness is unknown). */
  readonly conclusive: boolean;
  /**
   * $HOME, as the POSIX probe printed it on its second line: a sync needs it first, and asking here saves
   * that command its own channel (two round trips, 80 ms over a 40 ms link). Absent when not a plain absolute
   * path (remoteHome.ts): then the session asks again and refuses it by name.
   */
  readonly home?: string;
}

/**
 * Arithmetic expansion is POSIX and a syntax error in fish and csh; zsh parses it but reports ZSH_VERSION.
 * Only a POSIX shell other than zsh prints exactly the expected line. $HOME follows on a line of its own.
 */
export const LOGIN_SHELL_PROBE = 'echo "rft-sh $((6*7)) ${ZSH_VERSION:-}"; echo "rft-home $HOME"';
const CLEAN_MARK = 'rft-sh-clean';

export function classifyProbeOutput(stdout: string): ShellProbe {
  const m = /(?:^|\n)rft-sh 42 ([^\n]*)\nrft-home ([^\n]*)\n$/.exec(stdout);
  if (!m) return { shell: 'other', conclusive: false };
  const noise = stdout.slice(0, m.index + (m[0].startsWith('\n') ? 1 : 0));
  const posix = m[1] === '';
  const home = m[2]!;
  return { shell: posix ? 'posix' : 'other', conclusive: true, ...(noise ? { noise } : {}), ...(posix && isPlainAbsolutePath(home) ? { home } : {}) };
}

/** Bytes written as themselves in viaPosixShell's text: printable ASCII but for the ones some layer treats specially. */
const PLAIN_BYTE = /^[\x20-\x7e]$/;
const ESCAPED = new Set([...`'\\!"$\`%`]);

/**
 * `script` as one command line that fish, csh/tcsh, zsh and POSIX shells all pass to /bin/sh unchanged: the
 * outer text is a single-quoted word with no quote, newline or `!` (nothing fish or csh treat specially inside
 * single quotes; fish's backslash escapes are only `\'` and `\\`, and here a backslash is always followed by a
 * digit), and the script is the format of a printf in it, every other byte written as a three-digit octal
 * escape. printf is built into every POSIX sh, so this needs no program on the host (base64 once did).
 */
export function viaPosixShell(script: string): string {
  let format = '';
  for (const b of Buffer.from(script, 'utf8')) {
    const c = String.fromCharCode(b);
    format += PLAIN_BYTE.test(c) && !ESCAPED.has(c) ? c : `\\${b.toString(8).padStart(3, '0')}`;
  }
  return `exec /bin/sh -c 'eval "$(printf "${format}")"'`;
}

/** The message for a shell that prints on start-up; control characters are shown escaped. */
export function noisyShellMessage(host: string, noise: string): string {
  const shown = JSON.stringify(noise.length > 120 ? `${noise.slice(0, 120)}…` : noise);
  return (
    `The login shell on ${host} prints text before every command's output: ${shown}. Remote Fine-Tune reads ` +
    'command output (sync manifests, log offsets), so this would corrupt it; scp and rsync fail on such hosts too. ' +
    'Print that text only in interactive shells, e.g. put it under `case $- in *i*) … ;; esac` in ~/.bashrc.'
  );
}

/** The probe's answer is two short lines; a start-up file's noise worth showing fits in far less. */
const MAX_PROBE_OUTPUT = 4096;

function execOutput(client: Client, command: string, timeoutMs: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    let out = '';
    let errBytes = 0;
    let settled = false;
    let channel: ClientChannel | undefined;
    const done = (v: string | undefined): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(v);
    };
    // The channel is closed too: a host that keeps printing would otherwise stream into it for as long as the
    // connection lives.
    const giveUp = (): void => {
      channel?.close();
      done(undefined);
    };
    const timer = setTimeout(giveUp, timeoutMs);
    client.exec(command, (err, ch) => {
      if (err) return done(undefined);
      if (settled) return void ch.close();
      channel = ch;
      ch.on('data', (d: Buffer) => {
        out += d.toString('utf8');
        if (out.length > MAX_PROBE_OUTPUT) giveUp();
      });
      ch.stderr.on('data', (d: Buffer) => {
        errBytes += d.length;
        if (errBytes > 64 * MAX_PROBE_OUTPUT) giveUp();
      });
      ch.on('close', () => done(out));
    });
  });
}

/**
 * Probes a fresh connection. When the POSIX probe does not parse (fish, csh), a second, wrapped probe checks
 * for start-up noise. Any failure counts as 'other': the wrapped form works everywhere.
 */
export async function detectLoginShell(client: Client, timeoutMs = 10_000): Promise<ShellProbe> {
  const first = classifyProbeOutput((await execOutput(client, LOGIN_SHELL_PROBE, timeoutMs)) ?? '');
  if (first.conclusive) return first;
  const out = await execOutput(client, viaPosixShell(`echo ${CLEAN_MARK}`), timeoutMs);
  const at = out?.lastIndexOf(`${CLEAN_MARK}\n`) ?? -1;
  if (out === undefined || at < 0 || at + CLEAN_MARK.length + 1 !== out.length) return { shell: 'other', conclusive: false };
  return { shell: 'other', conclusive: true, ...(at > 0 ? { noise: out.slice(0, at) } : {}) };
}
