// sshd runs every exec'd command through the user's login shell ($SHELL -c "…"), and every command this
// extension sends is POSIX sh. On most GPU hosts the login shell is bash or dash and parses it as written; a
// user whose login shell is fish, csh/tcsh or zsh (which does not split unquoted variables and aborts on an
// unmatched glob) would get commands misparsed. One probe per connection tells which, and on those hosts each
// command is handed to /bin/sh in a form every shell passes through unchanged.
import type { Client } from 'ssh2';

export type LoginShell = 'posix' | 'other';

/**
 * Arithmetic expansion is POSIX and a syntax error in fish and csh; zsh parses it but reports ZSH_VERSION.
 * Only a POSIX shell other than zsh prints exactly the expected line.
 */
export const LOGIN_SHELL_PROBE = 'echo "rft-sh $((6*7)) ${ZSH_VERSION:-}"';

export function classifyProbeOutput(stdout: string): LoginShell {
  return stdout === 'rft-sh 42 \n' ? 'posix' : 'other';
}

/**
 * `script` as one command line that fish, csh/tcsh, zsh and POSIX shells all pass to /bin/sh unchanged: the
 * outer text is a single-quoted word holding only [A-Za-z0-9+/= "$()|%-] (nothing fish or csh treat specially
 * inside single quotes: no backslash, quote, newline or `!`), and the script travels base64-encoded in it.
 */
export function viaPosixShell(script: string): string {
  const b64 = Buffer.from(script, 'utf8').toString('base64');
  return `exec /bin/sh -c 'eval "$(printf %s ${b64} | base64 -d)"'`;
}

/** Runs the probe on a fresh connection. Any failure counts as 'other': the wrapped form works everywhere. */
export function detectLoginShell(client: Client, timeoutMs = 10_000): Promise<LoginShell> {
  return new Promise((resolve) => {
    let out = '';
    const timer = setTimeout(() => resolve('other'), timeoutMs);
    const done = (v: LoginShell): void => { clearTimeout(timer); resolve(v); };
    client.exec(LOGIN_SHELL_PROBE, (err, ch) => {
      if (err) return done('other');
      ch.on('data', (d: Buffer) => { if (out.length < 256) out += d.toString('utf8'); });
      ch.stderr.on('data', () => undefined);
      ch.on('close', () => done(classifyProbeOutput(out)));
    });
  });
}
