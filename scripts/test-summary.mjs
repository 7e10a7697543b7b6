// Adds up the counts each suite printed (node:test, unittest, the VS Code host suite) into one line.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.argv[2];
let passed = 0,
  failed = 0,
  skipped = 0;
for (const f of readdirSync(dir).sort()) {
  const text = readFileSync(join(dir, f), 'utf8');
  let p = 0,
    x = 0,
    s = 0,
    found = false;
  for (const m of text.matchAll(/^ℹ pass (\d+)$/gm)) {
    p += Number(m[1]);
    found = true;
  }
  for (const m of text.matchAll(/^ℹ fail (\d+)$/gm)) x += Number(m[1]);
  for (const m of text.matchAll(/^ℹ skipped (\d+)$/gm)) s += Number(m[1]);
  const ran = /^Ran (\d+) tests? in/m.exec(text);
  if (ran) {
    found = true;
    const total = Number(ran[1]);
    const fails = /FAILED \(([^)]*)\)/.exec(text)?.[1] ?? '';
    const count = (k) => Number(new RegExp(`${k}=(\\d+)`).exec(fails)?.[1] ?? /skipped=(\d+)/.exec(text.slice(ran.index))?.[1] ?? 0);
    const fl = Number(/failures=(\d+)/.exec(fails)?.[1] ?? 0) + Number(/errors=(\d+)/.exec(fails)?.[1] ?? 0);
    const sk = count('skipped');
    p += total - fl - sk;
    x += fl;
    s += sk;
  }
  for (const m of text.matchAll(/^training: (\d+) passed, (\d+) failed/gm)) {
    p += Number(m[1]);
    x += Number(m[2]);
    found = true;
  }
  for (const m of text.matchAll(/^(\d+) passed, (\d+) failed$/gm)) {
    p += Number(m[1]);
    x += Number(m[2]);
    found = true;
  }
  if (found) console.log(`  ${f.replace(/\.log$/, '').padEnd(18)} ${p} passed, ${x} failed, ${s} skipped`);
  passed += p;
  failed += x;
  skipped += s;
}
console.log(`total: ${passed} passed, ${failed} failed, ${skipped} skipped`);
