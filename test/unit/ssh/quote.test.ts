// Property test: whatever a string holds, shellQuote makes a real shell pass it through as one literal argument.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import fc from 'fast-check';
import { shellQuote, shellCommand, shellPath } from '../../../src/core/ssh/quote';
import { viaPosixShell } from '../../../src/core/ssh/loginShell';

const dangerous = fc.constantFrom(
  "'",
  '"',
  '$(',
  ')',
  '`',
  '\n',
  '\r',
  '\\',
  '$HOME',
  '${IFS}',
  '-',
  '--',
  '-rf',
  ';',
  '&',
  '|',
  '>',
  '<',
  '*',
  '?',
  '[a]',
  '~',
  ' ',
  '\t',
  '!',
  '#',
  '%',
  '{a,b}',
  'é',
  '日本語',
  '🙂',
  '\u202e',
  "''",
  "\\'",
);
const piece = fc.oneof(dangerous, fc.string({ unit: 'binary', maxLength: 6 }), fc.string({ maxLength: 6 }));
const arg = fc
  .array(piece, { maxLength: 8 })
  .map((p) => p.join(''))
  .filter((s) => !s.includes('\0') && Buffer.from(s, 'utf8').toString('utf8') === s);

function echoThrough(shell: string, args: readonly string[], wrap: (command: string) => string = (c) => c): Buffer {
  // printf's format is fixed; every argument after it is data, even one that starts with a dash.
  const r = spawnSync(shell, ['-c', wrap(`printf '%s\\0' ${shellCommand(args)}`)], { env: { PATH: '/usr/bin:/bin', HOME: '/nonexistent' } });
  assert.equal(r.status, 0, r.stderr.toString());
  return r.stdout;
}

for (const shell of ['/bin/sh', '/bin/bash', '/bin/dash']) {
  test(`shellQuote: ${shell} -c receives every argument literally`, { skip: existsSync(shell) ? false : `${shell} is not installed` }, () => {
    fc.assert(
      fc.property(fc.array(arg, { minLength: 1, maxLength: 4 }), (args) => {
        const out = echoThrough(shell, args);
        assert.deepEqual(out, Buffer.from(args.map((a) => `${a}\0`).join(''), 'utf8'));
      }),
      { numRuns: 150 },
    );
  });
}

// A host whose login shell is not a POSIX sh gets each command through viaPosixShell (loginShell.ts), and so
// does every host for the commands sent while its login shell is still being probed: bash and dash too.
for (const shell of ['/usr/bin/zsh', '/usr/bin/fish', '/usr/bin/tcsh', '/usr/bin/bash', '/usr/bin/dash']) {
  test(
    `shellQuote through viaPosixShell: login shell ${shell} passes every argument literally`,
    { skip: existsSync(shell) ? false : `${shell} is not installed` },
    () => {
      fc.assert(
        fc.property(fc.array(arg, { minLength: 1, maxLength: 4 }), (args) => {
          const out = echoThrough(shell, args, viaPosixShell);
          assert.deepEqual(out, Buffer.from(args.map((a) => `${a}\0`).join(''), 'utf8'));
        }),
        { numRuns: 100 },
      );
    },
  );
}

// The wrapped command runs in /bin/sh: dash on Debian and Ubuntu, bash on RHEL, BusyBox ash on Alpine. Each
// must read the octal escapes of printf's format the same way (a '%' written as \045 stays a '%').
for (const sh of ['/usr/bin/bash', '/usr/bin/busybox']) {
  test(`viaPosixShell: ${sh} as /bin/sh decodes the command exactly`, { skip: existsSync(sh) ? false : `${sh} is not installed` }, () => {
    const inner = sh.endsWith('busybox') ? `${sh} sh` : sh;
    fc.assert(
      fc.property(fc.array(arg, { minLength: 1, maxLength: 4 }), (args) => {
        const wrapped = viaPosixShell(`printf '%s\\0' ${shellCommand(args)}`);
        assert.ok(wrapped.startsWith('exec /bin/sh -c '));
        const out = echoThrough('/usr/bin/dash', [], () => wrapped.replace('/bin/sh', inner));
        assert.deepEqual(out, Buffer.from(args.map((a) => `${a}\0`).join(''), 'utf8'));
      }),
      { numRuns: 100 },
    );
  });
}

test('shellQuote: the empty string stays one (empty) argument', () => {
  assert.deepEqual(echoThrough('/bin/sh', ['', 'x', '']), Buffer.from('\0x\0\0'));
});

test('shellQuote: a NUL byte is refused rather than silently truncated', () => {
  assert.throws(() => shellQuote('a\0b'), RangeError);
});

test('shellQuote: plain words stay readable, anything else is single-quoted', () => {
  assert.equal(shellQuote('train.py'), 'train.py');
  assert.equal(shellQuote('a b'), "'a b'");
  assert.equal(shellQuote("it's"), "'it'\\''s'");
  assert.equal(shellQuote('$(rm -rf ~)'), "'$(rm -rf ~)'");
});

test('shellPath: ~/ expands to HOME, the rest stays literal', () => {
  fc.assert(
    fc.property(arg, (rest) => {
      const r = spawnSync('/bin/sh', ['-c', `printf '%s' ${shellPath(`~/${rest}`)}`], { env: { HOME: '/h o$me' } });
      assert.equal(r.stdout.toString('utf8'), `/h o$me/${rest}`);
    }),
    { numRuns: 100 },
  );
});
