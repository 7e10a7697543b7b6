import { test } from 'node:test';
import assert from 'node:assert/strict';
import { redirectLines, runEnv } from '../../../src/core/runs/lifecycle/runEnv';
import { APPROVED_WANDB_ORIGINS, approveHeld, isOriginApproved } from '../../../src/core/runs/store/originApprovals';
import type { ApprovalState } from '../../../src/core/runs/store/originApprovals';
import { typedSpec } from '../../support/typedSpec';

const HF = 'hf_storedTOKENabcdefghijklmnopqrstuvwx';
const WANDB = 'a'.repeat(40);
const hubSpec = typedSpec({ model: { id: 'meta-llama/Llama-3.1-8B' }, wandb: { enabled: true } });
const never = (): boolean => false;

function memory(): ApprovalState & { map: Map<string, unknown> } {
  const map = new Map<string, unknown>();
  return { map, get: <T>(k: string, d: T): T => (map.has(k) ? (map.get(k) as T) : d), update: async (k, v) => void map.set(k, v) };
}

test('a workspace HF_ENDPOINT holds the stored HF token back; W&B key to W&B cloud still goes', () => {
  const r = runEnv({ envFileText: 'HF_ENDPOINT=http://127.0.0.1:9\n', stored: { HF_TOKEN: HF, WANDB_API_KEY: WANDB }, spec: hubSpec, approved: never });
  assert.equal(r.env.HF_TOKEN, undefined);
  assert.equal(r.env.HF_ENDPOINT, 'http://127.0.0.1:9');
  assert.equal(r.env.WANDB_API_KEY, WANDB);
  assert.deepEqual(
    r.held.map((h) => [h.redirect.variable, h.redirect.host, h.secrets]),
    [['HF_ENDPOINT', '127.0.0.1:9', ['HF_TOKEN']]],
  );
  assert.deepEqual(r.sent, ['WANDB_API_KEY']);
  assert.deepEqual(redirectLines(r, '.env'), [
    'HF_ENDPOINT in .env points Hugging Face Hub requests at 127.0.0.1:9: your stored HF_TOKEN would go there, and you have not approved that host.',
  ]);
});

test('approved for that origin: the token goes, and the confirmation still names the host', () => {
  const r = runEnv({
    envFileText: 'HF_ENDPOINT=http://127.0.0.1:9/\n',
    stored: { HF_TOKEN: HF },
    spec: hubSpec,
    approved: (s, o) => s === 'HF_TOKEN' && o === 'http://127.0.0.1:9',
  });
  assert.equal(r.env.HF_TOKEN, HF);
  assert.deepEqual(r.held, []);
  assert.deepEqual(redirectLines(r, '.env'), [
    'HF_ENDPOINT in .env points Hugging Face Hub requests at 127.0.0.1:9, with your stored HF_TOKEN (host approved before).',
  ]);
});

test('a proxy holds every stored token; an approval for one token does not cover another', () => {
  const r = runEnv({
    envFileText: 'HTTPS_PROXY=http://proxy.corp:3128\n',
    stored: { HF_TOKEN: HF, WANDB_API_KEY: WANDB },
    spec: hubSpec,
    approved: (s) => s === 'WANDB_API_KEY',
  });
  assert.deepEqual(r.held[0]?.secrets, ['HF_TOKEN']);
  assert.equal(r.env.HF_TOKEN, undefined);
  assert.equal(r.env.WANDB_API_KEY, WANDB);
});

test("a held token leaves the workspace's own value of that name; unused tokens and data-only redirects hold nothing", () => {
  const own = runEnv({ envFileText: 'HF_TOKEN=hf_workspaceOwn\nHF_ENDPOINT=http://h\n', stored: { HF_TOKEN: HF }, spec: hubSpec, approved: never });
  assert.equal(own.env.HF_TOKEN, 'hf_workspaceOwn');
  // No hub use: the HF token is not sent at all, so nothing is held.
  const local = runEnv({ envFileText: 'HF_ENDPOINT=http://h\n', stored: { HF_TOKEN: HF }, spec: typedSpec({ model: { id: './m' } }), approved: never });
  assert.deepEqual([local.held, local.dropped, local.env.HF_TOKEN], [[], ['HF_TOKEN'], undefined]);
  const ml = runEnv({
    envFileText: 'MLFLOW_TRACKING_URI=https://ml.evil\n',
    stored: { HF_TOKEN: HF },
    spec: hubSpec,
    approved: never,
    mlflowTrackingUri: 'http://mine',
  });
  assert.deepEqual(ml.held, []);
  assert.equal(ml.env.MLFLOW_TRACKING_URI, 'https://ml.evil');
  assert.deepEqual(redirectLines(ml, '.env'), ["MLFLOW_TRACKING_URI in .env points the run's MLflow metrics and artifacts at ml.evil."]);
  assert.equal(runEnv({ stored: {}, spec: hubSpec, approved: never, mlflowTrackingUri: 'http://mine' }).env.MLFLOW_TRACKING_URI, 'http://mine');
});

test('approvals are remembered per token and origin, in the W&B list the metrics panel already keeps', async () => {
  const state = memory();
  state.map.set(APPROVED_WANDB_ORIGINS, ['https://wandb.corp']);
  const input = {
    envFileText: 'WANDB_BASE_URL=https://wandb.corp\nHF_ENDPOINT=http://127.0.0.1:9\n',
    stored: { HF_TOKEN: HF, WANDB_API_KEY: WANDB },
    spec: hubSpec,
  };
  const approved = (s: string, o: string): boolean => isOriginApproved(state, s, o);
  const first = runEnv({ ...input, approved });
  assert.deepEqual(
    first.held.map((h) => h.redirect.variable),
    ['HF_ENDPOINT'],
    'the W&B server the metrics panel was allowed to reach needs no second approval',
  );
  await approveHeld(state, first.held);
  assert.deepEqual(state.map.get('remoteFinetune.hf.approvedOrigins'), ['http://127.0.0.1:9']);
  assert.deepEqual(state.map.get(APPROVED_WANDB_ORIGINS), ['https://wandb.corp']);
  const again = runEnv({ ...input, approved });
  assert.deepEqual([again.held, again.env.HF_TOKEN, again.env.WANDB_API_KEY], [[], HF, WANDB]);
});
