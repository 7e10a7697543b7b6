// The ssh2 library, loaded on first use (it is a lazily loaded bundle in the VSIX: activation stays small), as
// ssh2Vendor.ts gives it. Its own file so session.ts and auth.ts can both name its type without importing each other.
import type * as Ssh2Module from 'ssh2';

/** ssh2's exports, and whether ssh2Vendor.ts could tune its AES-GCM packet path. */
export type SshModule = typeof Ssh2Module & { readonly gcmPacketPathTuned?: boolean };

/** ssh2 is CommonJS: under Node's ESM loader its `utils` export only exists on the default export. */
export async function loadSsh2(): Promise<SshModule> {
  const m = (await import('./ssh2Vendor.js')) as unknown as SshModule;
  const d = (m as unknown as { default?: SshModule }).default;
  return d && typeof d.Client === 'function' && d.utils ? d : m;
}
