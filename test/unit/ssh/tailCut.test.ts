// Where a tail batch may end: at a newline; for a log also at a carriage return that is not the last byte seen
// (a \r\n pair is never split); anywhere once an unterminated stretch exceeds MAX_PENDING.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { deliverableBytes, MAX_PENDING } from '../../../src/core/ssh/tail';

const b = (s: string): Buffer => Buffer.from(s, 'latin1');

test('cut points for logs and for record files', () => {
  assert.equal(deliverableBytes(b('no end yet'), true), 0);
  assert.equal(deliverableBytes(b('a\nb'), false), 2);
  assert.equal(deliverableBytes(b('a\rb'), false), 0);
  assert.equal(deliverableBytes(b('a\rb'), true), 2);
  assert.equal(deliverableBytes(b(' 40%|####\r 44%|####'), true), 10);
  assert.equal(deliverableBytes(b('a\r'), true), 0, 'a trailing \\r may be half of \\r\\n');
  assert.equal(deliverableBytes(b('\r'), true), 0);
  assert.equal(deliverableBytes(b('x\r\n'), true), 3);
  assert.equal(deliverableBytes(b('x\r\ny\r'), true), 3);
  assert.equal(deliverableBytes(Buffer.alloc(MAX_PENDING, 0x41), false), 0);
  assert.equal(deliverableBytes(Buffer.alloc(MAX_PENDING + 1, 0x41), false), MAX_PENDING + 1);
  const long = Buffer.concat([b('head\n'), Buffer.alloc(MAX_PENDING + 1, 0x41)]);
  assert.equal(deliverableBytes(long, false), long.length);
});

test('any chunking of any stream: bytes delivered once and in order, no CRLF split, nothing held past the bound', () => {
  let seed = 7;
  const rnd = (): number => {
    seed = (seed * 1103515245 + 12345) >>> 0;
    return seed / 2 ** 32;
  };
  for (let round = 0; round < 300; round++) {
    const alphabet = ['\r', '\n', '\r\n', 'x', 'yy', 'é'];
    const text = Array.from({ length: 1 + Math.floor(rnd() * 200) }, () => alphabet[Math.floor(rnd() * alphabet.length)]).join('');
    const stream = Buffer.from(text, 'utf8');
    for (const partial of [true, false]) {
      const out: Buffer[] = [];
      let pending = Buffer.alloc(0);
      for (let at = 0; at < stream.length;) {
        const n = 1 + Math.floor(rnd() * 9);
        const buf = Buffer.concat([pending, stream.subarray(at, at + n)]);
        at += n;
        const cut = deliverableBytes(buf, partial);
        if (cut > 0) out.push(buf.subarray(0, cut));
        pending = buf.subarray(cut);
        assert.ok(pending.length <= MAX_PENDING);
      }
      out.push(pending);
      assert.ok(Buffer.concat(out).equals(stream), 'every byte once, in order');
      for (let i = 0; i < out.length - 1; i++) {
        const o = out[i]!;
        if (o.length > 0 && o[o.length - 1] === 0x0d) assert.notEqual(out[i + 1]![0], 0x0a, 'a CRLF is never split');
        if (!partial && o.length > 0) assert.equal(o[o.length - 1], 0x0a, 'records end at a newline');
      }
    }
  }
});
