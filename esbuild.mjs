// Builds the extension (Node/CJS), the CLI, the lazily loaded vendor bundles and one browser bundle per webview.
import * as esbuild from 'esbuild';
import { existsSync, readdirSync, statSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { lazyExternal, nodeCommon, vendorBuild } from './esbuild.options.mjs';

const production = process.argv.includes('--production');
const watch = process.argv.includes('--watch');
const out = 'dist';

const nodeCommonOptions = nodeCommon(production);

const webviewDir = 'webview/src';
const webviewEntries = existsSync(webviewDir)
  ? readdirSync(webviewDir)
      .filter((d) => existsSync(join(webviewDir, d, 'main.ts')))
      .map((d) => ({ in: join(webviewDir, d, 'main.ts'), out: d }))
  : [];

const builds = [
  // configWorker: the full check of big configs off the extension host's thread (backgroundValidator.ts).
  {
    ...nodeCommonOptions,
    entryPoints: { extension: 'src/extension.ts', configWorker: 'src/core/config/validateWorker.ts' },
    outdir: out,
    plugins: [lazyExternal],
  },
  { ...nodeCommonOptions, entryPoints: { cli: 'src/cli/main.ts' }, outdir: out, plugins: [lazyExternal], banner: { js: '#!/usr/bin/env node' } },
  vendorBuild(production, out),
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
    outdir: `${out}/webview`,
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
if (production) rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
if (watch) {
  for (const b of builds) {
    const ctx = await esbuild.context(b);
    await ctx.watch();
  }
  console.log('watching…');
} else {
  const results = await Promise.all(builds.map((b) => esbuild.build(b)));
  printSizes(results);
  if (!statSync(`${out}/extension.js`).isFile()) process.exit(1);
}
