// The ssh2 the extension loads: the library, with its pure-Node AES-GCM packet path tuned (ssh2GcmCipher.ts).
// It is the entry of the lazily loaded ssh2 vendor bundle (esbuild.options.mjs), and ssh2Module.ts loads it, so
// the VSIX, the benchmarks and the tests run the same code.
import * as ssh2 from 'ssh2';
import { tuneGcmCipher } from './ssh2GcmCipher';
import type { Ssh2Crypto } from './ssh2GcmCipher';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const gcmPacketPathTuned = tuneGcmCipher(require('ssh2/lib/protocol/crypto.js') as Ssh2Crypto);

/** ssh2's exports, and whether its AES-GCM packet path is tuned (false: a different ssh2, left as it is). */
export = { ...ssh2, gcmPacketPathTuned };
