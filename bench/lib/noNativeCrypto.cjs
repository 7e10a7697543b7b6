// Preloaded by `RFT_BENCH_NATIVE_CRYPTO=0 npm run bench -- <name>`: makes ssh2's optional native crypto addon
// unloadable, as it is in the VSIX (VS Code's Electron cannot load an addon built for Node), so a benchmark
// measures the OpenSSL-through-node:crypto path the extension really uses there.
const Module = require('node:module');
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (/sshcrypto\.node$/.test(request)) throw Object.assign(new Error('native crypto disabled for this benchmark'), { code: 'MODULE_NOT_FOUND' });
  return resolve.call(this, request, ...rest);
};
