// The esbuild settings of the shipped extension, in one place: esbuild.mjs builds the VSIX's dist/ with them,
// and the SSH benchmarks (bench/lib/shipped.ts) build what they measure with them, so a benchmark runs the
// same bundled code and the same ssh2 bundle (without its native addon) that the VSIX loads.

import { fileURLToPath } from 'node:url';

// Heavy libraries are bundled on their own and required only when first used, so activation
// parses a small file. Source code reaches them through dynamic import() only. Each is named by
// the module its bundle is built from and the import specifiers source code reaches it by.
export const lazyVendors = {
  // Our entry: ssh2 with its AES-GCM packet path tuned.
  ssh2: { entry: fileURLToPath(new URL('./src/core/ssh/ssh2Vendor.ts', import.meta.url)), imports: ['./ssh2Vendor.js', 'ssh2'] },
  'client-ec2': { entry: '@aws-sdk/client-ec2', imports: ['@aws-sdk/client-ec2'] },
  'client-ssm': { entry: '@aws-sdk/client-ssm', imports: ['@aws-sdk/client-ssm'] },
  'client-pricing': { entry: '@aws-sdk/client-pricing', imports: ['@aws-sdk/client-pricing'] },
};

export const lazyExternal = {
  name: 'lazy-vendors',
  setup(build) {
    for (const [file, { imports }] of Object.entries(lazyVendors)) {
      for (const spec of imports) {
        const filter = new RegExp(`^${spec.replace(/[./@-]/g, (c) => `\\${c}`)}$`);
        build.onResolve({ filter }, () => ({ path: `./vendor/${file}.js`, external: true }));
      }
    }
  },
};

/** Options of every Node-side bundle; `production` is what `npm run package` ships. */
export function nodeCommon(production) {
  return {
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    sourcemap: !production,
    minify: production,
    logLevel: 'warning',
    // ssh2 probes for optional native addons and falls back to pure JS when they are absent.
    external: ['vscode', 'cpu-features', './crypto/build/Release/sshcrypto.node'],
    metafile: true,
  };
}

/** The lazily required vendor bundles, written to `<outdir>/vendor/<name>.js`. */
export function vendorBuild(production, outdir) {
  return {
    ...nodeCommon(production),
    entryPoints: Object.fromEntries(Object.entries(lazyVendors).map(([file, v]) => [file, v.entry])),
    outdir: `${outdir}/vendor`,
  };
}
