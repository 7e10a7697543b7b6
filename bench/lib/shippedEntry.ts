// What the SSH benchmarks measure, re-exported so bench/lib/shipped.ts can bundle it exactly as the VSIX
// bundles the extension (esbuild.options.mjs): minified, with ssh2 taken from the lazily required
// vendor/ssh2.js bundle and so without ssh2's native crypto addon. Benchmarks take these values only from the
// built bundle; importing them from src would measure the unbundled code on node_modules' ssh2 instead.
export { SshHost } from '../../src/core/ssh/reconnect';
export { syncWorkspace } from '../../src/core/ssh/sync';
export { tailFile } from '../../src/core/ssh/tail';
export { downloadFolder } from '../../src/core/runs/sync/artifacts';
export { RunStore } from '../../src/core/runs/store/runStore';
export { RunManager } from '../../src/core/runs/lifecycle/runManager';
export { Ledger } from '../../src/core/runs/store/ledger';
export { sshSync } from '../../src/core/runs/sync/runSync';
