// Secrets reach the host in exactly one form: the run's `env` file, mode 0600, written over SFTP. They never
// appear in a command line (visible in `ps`), in a log line or in a run record.
import type { SshSession } from './session';
import { shellQuote } from './quote';
import { writeFileAtomic } from './remoteFiles';

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Names that are not valid shell variable names (those are refused rather than mangled). */
export function invalidEnvNames(env: Readonly<Record<string, string>>): string[] {
  return Object.keys(env).filter((k) => !NAME.test(k));
}

/** The env file's text: one `export NAME='value'` per variable, sourced by the run wrapper. */
export function renderEnvFile(env: Readonly<Record<string, string>>): string {
  return Object.entries(env)
    .map(([k, v]) => `export ${k}=${shellQuote(v)}\n`)
    .join('');
}

/** Writes `<runDir>/env` (absolute remote path) with mode 0600. */
export async function writeSecretsFile(session: SshSession, runDir: string, env: Readonly<Record<string, string>>): Promise<void> {
  const bad = invalidEnvNames(env);
  if (bad.length > 0) throw new Error(`not valid environment variable names: ${bad.join(', ')}`);
  const sftp = await session.sftp();
  await writeFileAtomic(sftp, `${runDir}/env`, renderEnvFile(env), 0o600);
}
