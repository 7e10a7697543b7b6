// Preloaded into every benchmark by bench/run.ts: ssh2 may be loaded only as the VSIX ships it, from the
// vendor bundle bench/lib/shipped.ts builds. Any require of node_modules' ssh2 (whose native crypto addon the
// VSIX does not have) throws, so a benchmark cannot measure a program users do not run.
const Module = require('node:module');
const path = require('node:path');
const resolve = Module._resolveFilename;
const ssh2Dir = `${path.sep}node_modules${path.sep}ssh2${path.sep}`;
Module._resolveFilename = function (request, ...rest) {
  const resolved = resolve.call(this, request, ...rest);
  if (typeof resolved === 'string' && resolved.includes(ssh2Dir))
    throw Object.assign(new Error(`benchmarks load ssh2 only from the shipped vendor bundle, not ${resolved}`), { code: 'ERR_BENCH_UNSHIPPED_SSH2' });
  return resolved;
};
