// Builds the extension (Node/CJS), the CLI, the lazily loaded vendor bundles and one browser bundle per webview.
import * as esbuild from 'esbuild';
import { existsSync, readdirSync, statSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const production = process.argv.includes('--production');
const watch = process.argv.includes('--watch');

// Heavy libraries are bundled on their own and required only when first used, so activation
// parses a small file. Source code reaches them through dynamic import() only.
const lazyVendors = {
  ssh2: 'ssh2',
  'client-ec2': '@aws-sdk/client-ec2',
  'client-ssm': '@aws-sdk/client-ssm',
};
const lazyExternal = {
  name: 'lazy-vendors',
  setup(build) {
    for (const [file, spec] of Object.entries(lazyVendors)) {
      const filter = new RegExp(`^${spec.replace(/[/@-]/g, (c) => `\\${c}`)}$`);
      build.onResolve({ filter }, () => ({ path: `./vendor/${file}.js`, external: true }));
    }
  },
};

const nodeCommon = {
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

const webviewDir = 'webview/src';
const webviewEntries = existsSync(webviewDir)
  ? readdirSync(webviewDir)
      .filter((d) => existsSync(join(webviewDir, d, 'main.ts')))
      .map((d) => ({ in: join(webviewDir, d, 'main.ts'), out: d }))
  : [];

const builds = [
  // configWorker: the full check of big configs off the extension host's thread (backgroundValidator.ts).
  { ...nodeCommon, entryPoints: { extension: 'src/extension.ts', configWorker: 'src/core/config/validateWorker.ts' }, outdir: 'dist', plugins: [lazyExternal] },
  { ...nodeCommon, entryPoints: { cli: 'src/cli/main.ts' }, outdir: 'dist', plugins: [lazyExternal], banner: { js: '#!/usr/bin/env node' } },
  { ...nodeCommon, entryPoints: Object.fromEntries(Object.entries(lazyVendors).map(([f, s]) => [f, s])), outdir: 'dist/vendor' },
];
if (webviewEntries.length > 0) {
  builds.push({
    bundle: true,
    platform: 'browser',
    format: 'iife',
    target: 'es2022',
    sourcemap: !production,
    minify: production,
    logLevel: 'warning',
    entryPoints: webviewEntries,
    outdir: 'dist/webview',
    loader: { '.css': 'css', '.ttf': 'file', '.woff2': 'file' },
    metafile: true,
  });
}

function printSizes(results) {
  const rows = [];
  for (const r of results) {
    for (const [file, info] of Object.entries(r.metafile?.outputs ?? {})) {
      if (file.endsWith('.map')) continue;
      rows.push([file, info.bytes]);
    }
  }
  rows.sort((a, b) => a[0].localeCompare(b[0]));
  console.log('bundle sizes:');
  for (const [file, bytes] of rows) console.log(`  ${file.padEnd(40)} ${(bytes / 1024).toFixed(1).padStart(9)} KiB`);
}

// A production build starts from an empty dist/, so no stale source map or bundle can ship.
if (production) rmSync('dist', { recursive: true, force: true });
mkdirSync('dist', { recursive: true });
if (watch) {
  for (const b of builds) {
    const ctx = await esbuild.context(b);
    await ctx.watch();
  }
  console.log('watching…');
} else {
  const results = await Promise.all(builds.map((b) => esbuild.build(b)));
  printSizes(results);
  if (!statSync('dist/extension.js').isFile()) process.exit(1);
}
