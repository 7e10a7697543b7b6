// The first-run walkthrough and the empty Runs view as the manifest contributes them: every step's media and
// command exist, every completion event can fire, the example it opens ships in the VSIX and validates clean,
// and nothing sends a newcomer out of the editor.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { main } from '../../../src/cli/main';
import { copyExample, listExamples } from '../../../src/features/walkthrough/exampleCopy';
import { FIRST_EXAMPLE, WALKTHROUGH_COMMANDS, WALKTHROUGH_ID } from '../../../src/features/walkthrough/walkthroughIds';

const REPO = resolve(__dirname, '../../..');
interface Step {
  id: string;
  title: string;
  description: string;
  media: { markdown?: string; image?: string };
  completionEvents?: string[];
}
const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as {
  publisher: string;
  name: string;
  contributes: {
    commands: { command: string; title: string }[];
    walkthroughs?: { id: string; title: string; steps: Step[] }[];
    viewsWelcome?: { view: string; contents: string }[];
  };
};
const contributed = new Set(pkg.contributes.commands.map((c) => c.command));
const titleOf = (id: string): string | undefined => pkg.contributes.commands.find((c) => c.command === id)?.title;
const commandLinks = (text: string): string[] => [...text.matchAll(/\]\(command:([\w.]+)/g)].map((m) => m[1]!);
const tmp = mkdtempSync(join(tmpdir(), 'rft-walkthrough-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const n of readdirSync(dir)) {
    const p = join(dir, n);
    if (statSync(p).isDirectory()) sourceFiles(p, out);
    else if (p.endsWith('.ts')) out.push(p);
  }
  return out;
}
const SOURCE = sourceFiles(join(REPO, 'src'))
  .map((f) => readFileSync(f, 'utf8'))
  .join('\n');

const walkthrough = pkg.contributes.walkthroughs?.find((w) => w.id === WALKTHROUGH_ID);

test('walkthrough: add a host or a cloud key, open an example, check it, start it, watch it, in that order', () => {
  assert.ok(walkthrough, `contributes.walkthroughs has no "${WALKTHROUGH_ID}" (the id registerWalkthrough opens)`);
  assert.deepEqual(
    walkthrough.steps.map((s) => s.id),
    ['addTarget', 'openExample', 'validate', 'start', 'watch'],
  );
  const buttons = walkthrough.steps.map((s) => commandLinks(s.description));
  assert.ok(buttons[0]!.includes('remoteFinetune.addHost') && buttons[0]!.includes('remoteFinetune.setLambdaApiKey'), 'a host or a cloud key');
  assert.deepEqual(buttons[1], [WALKTHROUGH_COMMANDS.openExample]);
  assert.deepEqual(buttons[2], ['remoteFinetune.validateConfig']);
  assert.equal(titleOf(buttons[2]![0]!), 'Validate Training Config');
  assert.deepEqual(buttons[3], ['remoteFinetune.startTraining']);
  assert.equal(titleOf(buttons[3]![0]!), 'Start Training…');
  assert.deepEqual(buttons[4], ['remoteFinetune.showRunLogs', 'remoteFinetune.showTrainingMetrics', 'remoteFinetune.showGpuDashboard']);
});

test('walkthrough: every step names commands that exist, has its media file, and can be checked off', () => {
  assert.ok(walkthrough);
  for (const step of walkthrough.steps) {
    for (const id of commandLinks(step.description)) {
      assert.ok(contributed.has(id), `${step.id}: ${id} is not a contributed command`);
      assert.ok(SOURCE.includes(`'${id}'`), `${step.id}: ${id} is named nowhere in src/`);
    }
    const media = step.media.markdown ?? step.media.image;
    assert.ok(media, `${step.id} has media`);
    assert.match(media, /^media\/walkthrough\//);
    assert.ok(existsSync(join(REPO, media)) && statSync(join(REPO, media)).size > 100, `${step.id}: ${media} exists`);
    // A link out of the editor is what this walkthrough replaces.
    assert.doesNotMatch(readFileSync(join(REPO, media), 'utf8'), /https?:\/\//, `${media} sends the reader to the web`);
    assert.ok(step.completionEvents?.length, `${step.id} is checked off by something`);
    for (const e of step.completionEvents) {
      const [kind, arg] = e.split(/:(.*)/s) as [string, string];
      if (kind === 'onCommand') assert.ok(contributed.has(arg), `${step.id}: ${e} names no contributed command`);
      else if (kind === 'onContext') assert.ok(SOURCE.includes(`'${arg}'`), `${step.id}: ${e} is set nowhere in src/`);
      else assert.fail(`${step.id}: unexpected completion event ${e}`);
    }
  }
});

test('the empty Runs view offers Start Training and the walkthrough, and no link out of the editor', () => {
  const runs = pkg.contributes.viewsWelcome?.find((v) => v.view === 'remoteFinetune.runs');
  assert.ok(runs, 'viewsWelcome for remoteFinetune.runs');
  const links = commandLinks(runs.contents);
  assert.ok(links.includes('remoteFinetune.startTraining'), runs.contents);
  assert.ok(links.includes(WALKTHROUGH_COMMANDS.openWalkthrough), runs.contents);
  for (const id of links) assert.ok(contributed.has(id), `${id} is not a contributed command`);
  assert.doesNotMatch(runs.contents, /\]\(https?:/, 'a link that leaves the editor');
  for (const id of Object.values(WALKTHROUGH_COMMANDS)) assert.ok(contributed.has(id), `${id} contributed`);
  // VS Code opens a walkthrough by "<publisher>.<name>#<id>"; registerWalkthrough builds that from the extension id.
  assert.match(SOURCE, /openWalkthrough', `\$\{context\.extension\.id\}#\$\{WALKTHROUGH_ID\}`/);
});

test('the example the walkthrough opens ships in the VSIX, validates without a problem, and reads the way the step says', async () => {
  assert.deepEqual(listExamples(join(REPO, 'examples')).includes(FIRST_EXAMPLE), true);
  const listed = execFileSync(join(REPO, 'node_modules/.bin/vsce'), ['ls', '--no-dependencies'], { cwd: REPO, encoding: 'utf8' }).split('\n');
  for (const f of [`examples/${FIRST_EXAMPLE}/finetune.yaml`, `examples/${FIRST_EXAMPLE}/data/train.jsonl`, 'media/walkthrough/open-example.md'])
    assert.ok(listed.includes(f), `${f} is not in the VSIX`);
  assert.ok(!listed.some((f) => f.startsWith('examples/') && !f.startsWith(`examples/${FIRST_EXAMPLE}/`)), 'only the first-run example ships');
  const out: string[] = [];
  const code = await main(['validate', `examples/${FIRST_EXAMPLE}/finetune.yaml`, '--format', 'json'], {
    stdout: (t) => out.push(t),
    stderr: (t) => out.push(t),
    cwd: REPO,
  });
  assert.equal(code, 0, out.join(''));
  assert.deepEqual(JSON.parse(out.join('')), []);
  const rows = readFileSync(join(REPO, 'examples', FIRST_EXAMPLE, 'data/train.jsonl'), 'utf8')
    .trim()
    .split('\n');
  assert.equal(rows.length, 24, 'open-example.md says 24 chat examples');
  for (const r of rows) assert.deepEqual(Object.keys(JSON.parse(r) as object), ['messages']);
});

test('Open an Example copies into the folder, reopens an earlier copy as it was, and never writes over other files', () => {
  const examples = join(REPO, 'examples');
  const ws = join(tmp, 'ws');
  mkdirSync(ws);
  const first = copyExample(examples, FIRST_EXAMPLE, ws);
  assert.deepEqual(first, { spec: join(ws, FIRST_EXAMPLE, 'finetune.yaml'), created: true });
  assert.equal(readFileSync(first.spec, 'utf8'), readFileSync(join(examples, FIRST_EXAMPLE, 'finetune.yaml'), 'utf8'));
  assert.ok(existsSync(join(ws, FIRST_EXAMPLE, 'data/train.jsonl')));
  writeFileSync(first.spec, 'name: edited by the person\n');
  assert.deepEqual(copyExample(examples, FIRST_EXAMPLE, ws), { spec: first.spec, created: false });
  assert.equal(readFileSync(first.spec, 'utf8'), 'name: edited by the person\n');
  // A file (or a folder without a spec) already using the name: the example goes beside it.
  const other = join(tmp, 'ws2');
  mkdirSync(join(other, FIRST_EXAMPLE), { recursive: true });
  writeFileSync(join(other, FIRST_EXAMPLE, 'notes.txt'), 'mine');
  assert.deepEqual(copyExample(examples, FIRST_EXAMPLE, other), { spec: join(other, `${FIRST_EXAMPLE}-2`, 'finetune.yaml'), created: true });
  assert.deepEqual(readdirSync(join(other, FIRST_EXAMPLE)), ['notes.txt']);
  assert.throws(() => copyExample(examples, '../t4-qlora/..', ws), /no example named/);
});
