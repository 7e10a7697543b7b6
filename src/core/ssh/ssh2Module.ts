// The ssh2 library, loaded on first use (it is a lazily loaded bundle in the VSIX: activation stays small).
// Its own file so session.ts and auth.ts can both name its type without importing each other.
import type * as Ssh2Module from 'ssh2';

export type SshModule = typeof Ssh2Module;

/** ssh2 is CommonJS: under Node's ESM loader its `utils` export only exists on the default export. */
export async function loadSsh2(): Promise<SshModule> {
  const m = await import('ssh2');
  const d = (m as unknown as { default?: SshModule }).default;
  return d && typeof d.Client === 'function' && d.utils ? d : m;
}
