// Issue 39.8: one diagnostic per problem. The editor validates a file against the schema package.json contributes
// (VS Code's JSON service, the YAML extension) and also shows our diagnostics; the contributed schemas must leave
// validation to us. The reference is yaml-language-server's own validator (it reads JSON as YAML) on the very
// schema files package.json names. Also: offload_param below ZeRO-3 (RFT825), .env example placeholders (RFT611).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { getLanguageService } from 'yaml-language-server/lib/umd/languageservice/yamlLanguageService';
import { TextDocument } from 'vscode-languageserver-textdocument';
import { validateText } from '../../../src/core/config/validate';
import { allEditorSchemas, jsonSchemaFor } from '../../../src/core/config/jsonSchemas';
import type { ConfigKind } from '../../../src/core/config/types';

const root = join(__dirname, '../../..');
interface Contribution {
  readonly fileMatch: readonly string[];
  readonly url: string;
}
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  contributes: { jsonValidation: Contribution[]; yamlValidation: Contribution[] };
};
const contributed = [...pkg.contributes.jsonValidation, ...pkg.contributes.yamlValidation];

/** The schema package.json contributes for a file name, parsed from the file it names. */
function contributedSchema(file: string): Record<string, unknown> {
  const glob = (g: string): RegExp =>
    new RegExp(
      `^${g
        .replace(/\*\*\//g, '')
        .replace(/[.]/g, '\\.')
        .replace(/\*/g, '[^/]*')}$`,
    );
  const c = contributed.find((x) => x.fileMatch.some((g) => glob(g).test(file)));
  assert.ok(c, `package.json contributes no schema for ${file}`);
  return JSON.parse(readFileSync(join(root, c.url), 'utf8')) as Record<string, unknown>;
}

/** yaml-language-server's own diagnostics for `text` as file `file` under `schema`: what the editor adds to ours. */
async function referenceDiagnostics(file: string, text: string, schema: Record<string, unknown>): Promise<string[]> {
  const ls = getLanguageService({
    schemaRequestService: async (uri: string) => {
      throw new Error(`unexpected schema request ${uri}`);
    },
    workspaceContext: { resolveRelativePath: (rel: string) => rel },
  } as unknown as Parameters<typeof getLanguageService>[0]);
  ls.configure({
    validate: true,
    isKubernetes: false,
    schemas: [{ uri: `file:///schemas/${file}.schema.json`, fileMatch: [`/**/${file}`], schema }],
  } as unknown as Parameters<typeof ls.configure>[0]);
  const d = await ls.doValidation(TextDocument.create(`file:///ws/${file}`, 'yaml', 1, text), false);
  return d.map((x) => `${x.range.start.line + 1}: ${x.message}`);
}

const editorDiagnostics = (file: string, text: string): Promise<string[]> => referenceDiagnostics(file, text, contributedSchema(file));

const CASES: ReadonlyArray<{ file: string; text: string; ours: readonly string[] }> = [
  {
    file: 'ds_config.json',
    text: '{\n  "train_batch_size": "sixteen",\n  "zero_optimization": {"stage": 5, "offload_optimizer": {"device": "gpu"}, "overlap_com": true},\n  "bf16": {"enabled": "yes"}\n}\n',
    ours: ['RFT302', 'RFT303', 'RFT304'],
  },
  {
    file: 'finetune.yaml',
    text: 'version: 1\nname: x\nmodel:\n  id: m/x-1b\nmethod: lora-bf15\ndata:\n  train: d.jsonl\ntarget:\n  provider: ssh\n  gpu_count: 0\ntrainer:\n  learning_rate: fast\n',
    ours: ['RFT102', 'RFT103', 'RFT104'],
  },
  { file: 'accelerate.yaml', text: 'distributed_type: DEEP_SPEED\nnum_processes: -1\nmixed_precision: fp17\n', ours: ['RFT204'] },
];

test('the schemas package.json contributes report nothing the checks report: each problem is one diagnostic (ours)', async () => {
  for (const c of CASES) {
    const ours = validateText(c.text, { fileName: `/ws/${c.file}` }).diagnostics.map((d) => d.code);
    for (const code of c.ours) assert.ok(ours.includes(code), `${c.file}: we report ${code} (got ${ours.join(' ')})`);
    assert.deepEqual(await editorDiagnostics(c.file, c.text), [], `${c.file}: the contributed schema adds diagnostics of its own`);
  }
});

test('the full schemas still catch those problems (the reference validator is live), and the editor copies are current', async () => {
  const kinds: Record<string, ConfigKind> = { 'ds_config.json': 'deepspeed', 'finetune.yaml': 'runspec', 'accelerate.yaml': 'accelerate' };
  const generated = allEditorSchemas();
  for (const c of CASES) {
    const kind = kinds[c.file]!;
    const d = await referenceDiagnostics(c.file, c.text, jsonSchemaFor(kind)!);
    assert.ok(d.length > 0, `${c.file}: the full schema finds the planted problems`);
    assert.equal(
      readFileSync(join(root, 'schemas/editor', `${kind}.schema.json`), 'utf8'),
      generated.get(`${kind}.schema.json`),
      `schemas/editor/${kind} is stale`,
    );
  }
  // Completion and hovers still have every property with its description.
  const ds = contributedSchema('ds_config.json') as { properties: Record<string, { description?: string }> };
  assert.deepEqual(Object.keys(ds.properties), Object.keys((jsonSchemaFor('deepspeed') as { properties: object }).properties));
  for (const [k, v] of Object.entries(ds.properties)) assert.ok(v.description, k);
});

test('RFT825: offload_param below ZeRO-3 is a warning at the device, with both fixes; stage 3 or device none is not', () => {
  const ds = (stage: string, device: string): string =>
    `{\n  "zero_optimization": {${stage}"offload_param": {"device": "${device}"}, "offload_optimizer": {"device": "cpu"}}\n}\n`;
  const at = (text: string): Array<{ at: string; severity: string; fixes: string[] }> =>
    validateText(text, { fileName: '/ws/ds_config.json' })
      .diagnostics.filter((d) => d.code === 'RFT825')
      .map((d) => ({ at: text.slice(d.start, d.end), severity: d.severity, fixes: (d.fixes ?? []).map((f) => f.title) }));
  assert.deepEqual(at(ds('"stage": 2, ', 'cpu')), [
    { at: '"cpu"', severity: 'warning', fixes: ['Use ZeRO stage 3 (parameters partitioned and offloaded)', 'Set offload_param to none'] },
  ]);
  assert.equal(at(ds('', 'nvme')).length, 1, 'no stage is stage 0');
  assert.deepEqual(at(ds('"stage": 3, ', 'cpu')), []);
  assert.deepEqual(at(ds('"stage": 1, ', 'none')), []);
  const acc = 'distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 2\n  offload_param_device: cpu\nnum_processes: 2\n';
  const a = validateText(acc, { fileName: '/ws/accelerate.yaml' }).diagnostics.filter((d) => d.code === 'RFT825');
  assert.equal(a.length, 1);
  assert.match(a[0]!.message, /^offload_param_device cpu does nothing at ZeRO stage 2/);
});

test('RFT611: .env values that are an example’s placeholder are warned at the value, without echoing it; real values, blanks and examples are not', () => {
  const env = [
    'HF_TOKEN=hf_your_token_here',
    'WANDB_API_KEY=<your-key>',
    'AWS_SECRET_ACCESS_KEY=xxx',
    'OPENAI_API_KEY=changeme',
    'GITHUB_TOKEN=YOUR_GITHUB_TOKEN',
    'ANTHROPIC_API_KEY=sk-...',
    'MODEL_NAME=your-model-here',
    'HUB_TOKEN=${HF_TOKEN}',
    'DB_PASSWORD=s3cr3t-real-value-123',
    'REAL_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123456789',
    'HUGGINGFACE_TOKEN=',
    '',
  ].join('\n');
  const found = validateText(env, { fileName: '/ws/.env' }).diagnostics.filter((d) => d.code === 'RFT611');
  assert.deepEqual(
    found.map((d) => env.slice(d.start, d.end)),
    ['hf_your_token_here', '<your-key>', 'xxx', 'changeme', 'YOUR_GITHUB_TOKEN', 'sk-...'],
  );
  for (const d of found) {
    assert.equal(d.severity, 'warning');
    assert.doesNotMatch(d.message, /your|changeme|xxx/i, 'the value is not repeated in the message');
  }
  assert.match(found[0]!.message, /^HF_TOKEN looks like an example's placeholder, not a real token/);
  assert.deepEqual(
    validateText(env, { fileName: '/ws/.env.example' }).diagnostics.filter((d) => d.code === 'RFT611'),
    [],
    'the example itself is where placeholders belong',
  );
});
