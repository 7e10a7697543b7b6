// Builds and loads the code the SSH benchmarks measure, as the VSIX ships it: the production options of
// esbuild.options.mjs (the ones `npm run package` uses), our code in one minified bundle that requires
// ./vendor/ssh2.js, and that vendor bundle built beside it, where ssh2's optional native addon is absent as it is
// in the VSIX. Every SSH verdict records the SHA-256 of the ssh2 bundle it ran on, and
// test/unit/bench/shippedBundle.test.ts checks it against a fresh production build of the VSIX's vendor bundle.
import { build } from 'esbuild';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { lazyExternal, lazyVendors, nodeCommon, vendorBuild } from '../../esbuild.options.mjs';
import type * as Entry from './shippedEntry';

export type Shipped = typeof Entry;

const REPO = resolve(__dirname, '..', '..');
/** Where the benchmark bundle is built (git-ignored). */
export const SHIPPED_DIR = join(REPO, '.bench-build');
export const SSH2_BUNDLE = 'vendor/ssh2.js';

export interface ShippedBuild {
  readonly code: Shipped;
  /** SHA-256 of the ssh2 vendor bundle measured (the VSIX's dist/vendor/ssh2.js when built from the same tree). */
  readonly ssh2BundleSha256: string;
  /** SHA-256 of our bundled code measured. */
  readonly codeSha256: string;
  /** Whether ssh2's native crypto addon could load beside the bundle (never, as in the VSIX). */
  readonly nativeCrypto: boolean;
  /** Whether the bundle's ssh2 runs the tuned AES-GCM packet path (src/core/ssh/ssh2GcmCipher.ts). */
  readonly gcmPacketPathTuned: boolean;
}

export function sha256Of(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

/** Builds the VSIX's ssh2 vendor bundle (production) under `outdir`; returns its path. */
export async function buildSsh2Bundle(outdir: string): Promise<string> {
  await build({ ...vendorBuild(true, outdir), entryPoints: { ssh2: lazyVendors.ssh2.entry }, metafile: false, logLevel: 'error' });
  return join(outdir, SSH2_BUNDLE);
}

/** Builds the shipped code into `dir` (default SHIPPED_DIR, emptied first) and loads it. */
export async function loadShipped(dir: string = SHIPPED_DIR): Promise<ShippedBuild> {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const ssh2 = await buildSsh2Bundle(dir);
  const out = join(dir, 'shipped.js');
  await build({
    ...nodeCommon(true),
    entryPoints: [join(__dirname, 'shippedEntry.ts')],
    outfile: out,
    plugins: [lazyExternal],
    metafile: false,
    logLevel: 'error',
  });
  // ssh2 looks for its addon relative to its own file; in the VSIX nothing is there.
  const nativeCrypto = existsSync(join(dir, 'vendor', 'crypto', 'build', 'Release', 'sshcrypto.node'));
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const code = require(out) as Shipped;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const gcmPacketPathTuned = (require(ssh2) as { gcmPacketPathTuned?: boolean }).gcmPacketPathTuned === true;
  return { code, ssh2BundleSha256: sha256Of(ssh2), codeSha256: sha256Of(out), nativeCrypto, gcmPacketPathTuned };
}

/** The fields every SSH verdict carries about the code it measured. */
export function shippedFields(b: ShippedBuild): Record<string, string | boolean> {
  return { code: 'shipped bundle (production esbuild, vendor/ssh2.js)', ssh2_native_crypto: b.nativeCrypto, ssh2_bundle_sha256: b.ssh2BundleSha256 };
}
