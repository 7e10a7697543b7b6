// ssh2's AES-GCM packet cipher as the extension host runs it: without ssh2's native addon (the VSIX cannot ship
// a Node-built addon for VS Code's Electron), every outgoing packet goes through ssh2's pure-Node class, which
// allocates a fresh buffer for each packet (32 KiB for each chunk of an upload, later swept by the garbage
// collector) and calls randomFillSync, a crypto binding round trip, for each packet's 4 to 19 bytes of padding.
// Profiled on a 512 MiB upload, those two cost more of the extension host's one thread than the AES-GCM itself.
//
// The tuning keeps ssh2's encryption and wire format exactly and changes only where bytes live:
// - a large packet is built in one scratch buffer per cipher, reused once ssh2 has encrypted the previous one
//   (the four length bytes, which ssh2 hands to the socket as they are, are copied out first). A packet that is
//   allocated and not encrypted before the next (ssh2 queues packets during a key exchange) keeps the scratch
//   buffer, and the packets after it get buffers of their own;
// - padding comes from a pool of random bytes filled 16 KiB at a time, each byte used once.
// It is applied only when ssh2's class has the shape this was written against and, on a probe packet, gives
// byte for byte what ssh2's own methods give; otherwise ssh2 is left as it is.
import { createCipheriv, randomBytes, randomFillSync } from 'node:crypto';

/** The parts of ssh2's lib/protocol/crypto.js used here. */
export interface Ssh2Crypto {
  readonly CIPHER_INFO: Record<string, unknown>;
  createCipher(config: unknown): object;
}

/** ssh2's outgoing AES-GCM cipher object (lib/protocol/crypto.js, AESGCMCipherNative), the fields used here. */
interface GcmCipher {
  outSeqno: number;
  _onWrite: (data: Buffer) => void;
  _encSSLName: string;
  _encKey: Buffer;
  _encIV: Buffer;
  _dead: boolean;
  allocPacket(payloadLen: number): Buffer;
  encrypt(packet: Buffer): void;
}

/** Packets at least this long are built in the scratch buffer; smaller ones come from Node's shared pool anyway. */
const SCRATCH_MIN = 4096;
const TUNED = Symbol.for('remote-finetune.ssh2-gcm-tuned');

interface Scratch {
  buf?: Buffer;
  /** Handed out by allocPacket and not yet encrypted. */
  out: boolean;
}

const scratchOf = new WeakMap<object, Scratch>();

/** Random bytes handed out once each, refilled in one call when used up. */
export class RandomPool {
  private readonly buf: Buffer;
  private at: number;

  constructor(size = 16384) {
    this.buf = Buffer.allocUnsafeSlow(size);
    this.at = size;
  }

  /** Writes `n` (at most the pool's size) fresh random bytes into `target` at `offset`. */
  fill(target: Buffer, offset: number, n: number): void {
    if (this.at + n > this.buf.length) {
      randomFillSync(this.buf);
      this.at = 0;
    }
    this.buf.copy(target, offset, this.at, this.at + n);
    this.at += n;
  }
}

const padding = new RandomPool();

/** The IV's invocation counter (bytes 4 to 11, big-endian) plus one, as RFC 5647 and ssh2 step it per packet. */
function ivIncrement(iv: Buffer): void {
  for (let i = 11; i >= 4; i--) {
    iv[i] = (iv[i]! + 1) & 0xff;
    if (iv[i] !== 0) return;
  }
}

function allocPacket(this: GcmCipher, payloadLen: number): Buffer {
  let pktLen = 4 + 1 + payloadLen;
  let padLen = 16 - ((pktLen - 4) & 15);
  if (padLen < 4) padLen += 16;
  pktLen += padLen;
  let packet: Buffer;
  let scratch = scratchOf.get(this);
  if (!scratch) scratchOf.set(this, (scratch = { out: false }));
  if (pktLen >= SCRATCH_MIN && !scratch.out) {
    if (!scratch.buf || scratch.buf.length < pktLen) scratch.buf = Buffer.allocUnsafeSlow(pktLen);
    packet = scratch.buf.subarray(0, pktLen);
    scratch.out = true;
  } else {
    packet = Buffer.allocUnsafe(pktLen);
  }
  packet.writeUInt32BE(pktLen - 4, 0);
  packet[4] = padLen;
  padding.fill(packet, 5 + payloadLen, padLen);
  return packet;
}

function encrypt(this: GcmCipher, packet: Buffer): void {
  if (this._dead) return;
  const cipher = createCipheriv(this._encSSLName as 'aes-128-gcm', this._encKey, this._encIV);
  cipher.setAutoPadding(false);
  const scratch = scratchOf.get(this);
  const fromScratch = scratch?.buf !== undefined && packet.buffer === scratch.buf.buffer;
  // The socket keeps what it is given until it is sent; the scratch buffer is rewritten by the next packet.
  const lenData = fromScratch ? Buffer.from(packet.subarray(0, 4)) : packet.subarray(0, 4);
  cipher.setAAD(lenData);
  this._onWrite(lenData);
  this._onWrite(cipher.update(packet.subarray(4)));
  const final = cipher.final();
  if (final.length) this._onWrite(final);
  this._onWrite(cipher.getAuthTag());
  if (fromScratch) scratch.out = false;
  ivIncrement(this._encIV);
  this.outSeqno = (this.outSeqno + 1) >>> 0;
}

function newCipher(crypto: Ssh2Crypto, key: Buffer, iv: Buffer, onWrite: (d: Buffer) => void): GcmCipher | undefined {
  const cipherInfo = crypto.CIPHER_INFO['aes128-gcm@openssh.com'];
  if (!cipherInfo) return undefined;
  // forceNative: the pure-Node class even where the addon is built (a developer's node_modules), as in the VSIX.
  return crypto.createCipher({ outbound: { onWrite, cipherInfo, cipherKey: key, cipherIV: iv, seqno: 0, forceNative: true } }) as GcmCipher;
}

function looksLikeGcmCipher(c: Partial<GcmCipher> | undefined): c is GcmCipher {
  return (
    !!c &&
    c._encSSLName === 'aes-128-gcm' &&
    Buffer.isBuffer(c._encKey) &&
    Buffer.isBuffer(c._encIV) &&
    c._encIV.length === 12 &&
    typeof c._onWrite === 'function' &&
    c.outSeqno === 0 &&
    c._dead === false &&
    typeof c.allocPacket === 'function' &&
    typeof c.encrypt === 'function'
  );
}

/** The bytes a cipher writes for `payloads`, each packet's padding overwritten with the given bytes. */
function writesFor(
  crypto: Ssh2Crypto,
  key: Buffer,
  iv: Buffer,
  payloads: readonly Buffer[],
  methods: Pick<GcmCipher, 'allocPacket' | 'encrypt'>,
  pads: Buffer[],
  keepPads: boolean,
): Buffer {
  const out: Buffer[] = [];
  const c = newCipher(crypto, key, Buffer.from(iv), (d) => out.push(Buffer.from(d)))!;
  payloads.forEach((p, i) => {
    const packet = methods.allocPacket.call(c, p.length);
    p.copy(packet, 5);
    if (keepPads) pads.push(Buffer.from(packet.subarray(5 + p.length)));
    else pads[i]!.copy(packet, 5 + p.length);
    methods.encrypt.call(c, packet);
  });
  return Buffer.concat(out);
}

/**
 * Tunes ssh2's pure-Node AES-GCM cipher class (every AES-GCM connection made after this, 128- and 256-bit alike).
 * Returns whether it did; false leaves ssh2 untouched (another ssh2 whose class differs from the one this was
 * written against). Calling it again changes nothing.
 */
export function tuneGcmCipher(crypto: Ssh2Crypto): boolean {
  let probe: GcmCipher | undefined;
  try {
    probe = newCipher(crypto, randomBytes(16), randomBytes(12), () => undefined);
  } catch {
    return false;
  }
  if (!looksLikeGcmCipher(probe)) return false;
  const proto = Object.getPrototypeOf(probe) as GcmCipher & { [TUNED]?: true };
  if (proto[TUNED]) return true;
  const original = { allocPacket: proto.allocPacket, encrypt: proto.encrypt };
  // The probe: packets below and above the scratch size, back to back, through ssh2's methods and through ours,
  // with the same key, IV and padding bytes; the bytes written must be the same.
  const key = randomBytes(16);
  const iv = randomBytes(12);
  iv.fill(0xff, 8); // the invocation counter carries across bytes on the second packet
  const payloads = [randomBytes(40), randomBytes(32 * 1024 + 9), randomBytes(SCRATCH_MIN + 100), randomBytes(7)];
  const pads: Buffer[] = [];
  const expected = writesFor(crypto, key, iv, payloads, original, pads, true);
  proto.allocPacket = allocPacket;
  proto.encrypt = encrypt;
  let same = false;
  try {
    same = writesFor(crypto, key, iv, payloads, { allocPacket, encrypt }, pads, false).equals(expected);
  } catch {
    same = false;
  }
  if (!same) {
    proto.allocPacket = original.allocPacket;
    proto.encrypt = original.encrypt;
    return false;
  }
  Object.defineProperty(proto, TUNED, { value: true });
  return true;
}
