// The tuned AES-GCM packet path (ssh2GcmCipher.ts) against ssh2's own: byte for byte the same on the wire for
// the same padding, decrypted by ssh2's own decipher, and safe where buffers are reused (a packet ssh2 queues
// during a key exchange; the length bytes the socket still holds). Each side is a fresh copy of ssh2's crypto
// module, so the untuned class is ssh2's as published whatever else this process loaded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import { RandomPool, tuneGcmCipher } from '../../../src/core/ssh/ssh2GcmCipher';
import type { Ssh2Crypto } from '../../../src/core/ssh/ssh2GcmCipher';

const req = createRequire(__filename);
const CRYPTO = req.resolve('ssh2/lib/protocol/crypto.js');

/** A copy of ssh2's crypto module of its own (its classes are not the ones any other copy has). */
function freshCrypto(): Ssh2Crypto & { createDecipher(config: unknown): { decrypt(d: Buffer, p: number, n: number): void } } {
  delete req.cache[CRYPTO];
  const m = req(CRYPTO) as ReturnType<typeof freshCrypto>;
  delete req.cache[CRYPTO];
  return m;
}

interface Cipher {
  allocPacket(n: number): Buffer;
  encrypt(p: Buffer): void;
}

function cipherOf(m: Ssh2Crypto, name: string, key: Buffer, iv: Buffer, onWrite: (d: Buffer) => void): Cipher {
  const cipherInfo = m.CIPHER_INFO[name];
  return m.createCipher({ outbound: { onWrite, cipherInfo, cipherKey: key, cipherIV: Buffer.from(iv), seqno: 0, forceNative: true } }) as unknown as Cipher;
}

/** ssh2's own decipher (the pure-Node one) over `wire`: the payloads, in order; throws on a bad tag. */
function decrypt(m: ReturnType<typeof freshCrypto>, name: string, key: Buffer, iv: Buffer, wire: Buffer): Buffer[] {
  const payloads: Buffer[] = [];
  const d = m.createDecipher({
    inbound: {
      onPayload: (p: Buffer) => void payloads.push(Buffer.from(p)),
      decipherInfo: m.CIPHER_INFO[name],
      decipherKey: key,
      decipherIV: Buffer.from(iv),
      seqno: 0,
      forceNative: true,
    },
  });
  // In odd-sized pieces, as a socket delivers them.
  for (let at = 0; at < wire.length; at += 7777) d.decrypt(wire, at, Math.min(wire.length, at + 7777));
  return payloads;
}

// ssh2 reads packets of at most 35,000 bytes (its MAX_PACKET_SIZE), as sshd sends them.
const SIZES = [0, 1, 7, 40, 4095, 4096, 4200, 16384, 32768, 32777, 34900];
const sizes = (): number[] => [...SIZES, ...Array.from({ length: 200 }, () => Math.floor(Math.random() * 34900))];

for (const [name, keyLen] of [
  ['aes128-gcm@openssh.com', 16],
  ['aes256-gcm@openssh.com', 32],
] as const) {
  test(`${name}: the tuned packet path writes exactly what ssh2's does for the same padding, packet after packet`, () => {
    const plain = freshCrypto();
    const tunedMod = freshCrypto();
    assert.equal(tuneGcmCipher(tunedMod), true);
    const key = randomBytes(keyLen);
    const iv = randomBytes(12);
    iv.fill(0xfe, 6); // the invocation counter carries across bytes within the first packets
    const theirs: Buffer[] = [];
    const ours: Buffer[] = [];
    const a = cipherOf(plain, name, key, iv, (d) => theirs.push(Buffer.from(d)));
    const b = cipherOf(tunedMod, name, key, iv, (d) => ours.push(Buffer.from(d)));
    assert.notEqual(Object.getPrototypeOf(a), Object.getPrototypeOf(b), 'two separate copies of the class');
    const payloads: Buffer[] = [];
    for (const n of sizes()) {
      const payload = randomBytes(n);
      payloads.push(payload);
      const pb = b.allocPacket(n);
      const pa = a.allocPacket(n);
      assert.equal(pb.length, pa.length, `packet length for ${n}`);
      assert.deepEqual(pb.subarray(0, 5), pa.subarray(0, 5), `length and padding length for ${n}`);
      payload.copy(pa, 5);
      payload.copy(pb, 5);
      pb.copy(pa, 5 + n, 5 + n); // the same padding bytes on both sides
      a.encrypt(pa);
      b.encrypt(pb);
    }
    assert.ok(Buffer.concat(ours).equals(Buffer.concat(theirs)), 'the same bytes on the wire');
    assert.deepEqual(decrypt(plain, name, key, iv, Buffer.concat(ours)), payloads, "ssh2's decipher reads every payload back");
  });
}

test('a packet allocated and kept (ssh2 queues packets during a key exchange) keeps its bytes while later ones are sent', () => {
  const m = freshCrypto();
  assert.equal(tuneGcmCipher(m), true);
  const key = randomBytes(16);
  const iv = randomBytes(12);
  const wire: Buffer[] = [];
  const c = cipherOf(m, 'aes128-gcm@openssh.com', key, iv, (d) => wire.push(Buffer.from(d)));
  const kept = randomBytes(32768);
  const queued = c.allocPacket(kept.length);
  kept.copy(queued, 5);
  const later = [randomBytes(32768), randomBytes(20000), randomBytes(32768)];
  for (const p of later) {
    const packet = c.allocPacket(p.length);
    assert.notEqual(packet.buffer, queued.buffer, 'a later packet does not share the kept one');
    p.copy(packet, 5);
    c.encrypt(packet);
  }
  c.encrypt(queued);
  assert.deepEqual(decrypt(m, 'aes128-gcm@openssh.com', key, iv, Buffer.concat(wire)), [...later, kept]);
});

test('the length bytes handed to the socket keep their value after the scratch buffer is reused', () => {
  const m = freshCrypto();
  assert.equal(tuneGcmCipher(m), true);
  const held: Buffer[] = []; // not copied: what a socket that has not flushed yet holds
  const c = cipherOf(m, 'aes128-gcm@openssh.com', randomBytes(16), randomBytes(12), (d) => held.push(d));
  const first = c.allocPacket(30000);
  const firstLen = first.readUInt32BE(0);
  c.encrypt(first);
  const second = c.allocPacket(10000);
  assert.equal(second.buffer, first.buffer, 'the scratch buffer is reused once the first packet was encrypted');
  c.encrypt(second);
  assert.equal(held[0]!.length, 4);
  assert.equal(held[0]!.readUInt32BE(0), firstLen, 'the first packet length as it was sent');
});

test('padding is fresh random bytes: no two packets of 2,000 share theirs, and a pool never hands a byte out twice', () => {
  const m = freshCrypto();
  assert.equal(tuneGcmCipher(m), true);
  const c = cipherOf(m, 'aes128-gcm@openssh.com', randomBytes(16), randomBytes(12), () => undefined);
  const seen = new Set<string>();
  for (let i = 0; i < 2000; i++) {
    const n = 32768 + 9;
    const p = c.allocPacket(n);
    const pad = p.subarray(5 + n);
    assert.ok(pad.length >= 4 && pad.length <= 19, `padding length ${pad.length}`);
    seen.add(pad.toString('hex'));
    c.encrypt(p);
  }
  assert.equal(seen.size, 2000);
  // A pool of 64 bytes handing out 16 at a time: 40 draws across 10 refills, all distinct.
  const pool = new RandomPool(64);
  const draws = new Set<string>();
  for (let i = 0; i < 40; i++) {
    const b = Buffer.alloc(16);
    pool.fill(b, 0, 16);
    draws.add(b.toString('hex'));
  }
  assert.equal(draws.size, 40);
});

test('another ssh2, whose class differs from the one this was written against, is left as it is', () => {
  // Fields missing: not touched.
  const bare = { CIPHER_INFO: { 'aes128-gcm@openssh.com': {} }, createCipher: () => ({ allocPacket: () => Buffer.alloc(0), encrypt: () => undefined }) };
  assert.equal(tuneGcmCipher(bare), false);
  // The right fields, but an encrypt that writes something else (say, a future ssh2 framing packets otherwise):
  // the probe sees the difference and puts the class back.
  const m = freshCrypto();
  const probe = m.createCipher({
    outbound: {
      onWrite: () => undefined,
      cipherInfo: m.CIPHER_INFO['aes128-gcm@openssh.com'],
      cipherKey: randomBytes(16),
      cipherIV: randomBytes(12),
      seqno: 0,
      forceNative: true,
    },
  });
  const proto = Object.getPrototypeOf(probe) as Cipher & { _onWrite?: unknown };
  const theirEncrypt = proto.encrypt;
  proto.encrypt = function (this: { _onWrite: (d: Buffer) => void }, p: Buffer) {
    theirEncrypt.call(this, p);
    this._onWrite(Buffer.from('trailer'));
  };
  const changed = proto.encrypt;
  assert.equal(tuneGcmCipher(m), false);
  assert.equal(proto.encrypt, changed, 'their encrypt is in place');
});

test('tuning twice changes nothing', () => {
  const m = freshCrypto();
  assert.equal(tuneGcmCipher(m), true);
  const c = cipherOf(m, 'aes128-gcm@openssh.com', randomBytes(16), randomBytes(12), () => undefined);
  const methods = Object.getPrototypeOf(c) as Cipher;
  const { allocPacket, encrypt } = methods;
  assert.equal(tuneGcmCipher(m), true);
  assert.equal(methods.allocPacket, allocPacket);
  assert.equal(methods.encrypt, encrypt);
});
