// A workspace .env names a loopback "Hub" (HF_ENDPOINT); the user's HF token is in the secret store. Through the
// start path's env decision (confirmRunEnv), the 0600 env file as the host gets it (renderEnvFile), and the host
// reading it the way the runner does (envfile.read_env_file, spec.hub_token) before a Hub request: without the
// person's approval the listener receives nothing and no token is written; after approval the token goes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { confirmRunEnv } from '../../../src/core/runs/lifecycle/startGate';
import type { ApprovalState } from '../../../src/core/runs/store/originApprovals';
import { renderEnvFile } from '../../../src/core/ssh/envFile';
import { typedSpec } from '../../support/typedSpec';

const RUNNER = resolve(__dirname, '../../../python-runner');
const TOKEN = 'hf_storedTOKENabcdefghijklmnopqrstuvwx';
const spec = typedSpec({ model: { id: 'meta-llama/Llama-3.1-8B' }, data: { train: 'hf://datasets/org/corpus' } });

let server: Server;
let url: string;
const received: IncomingHttpHeaders[] = [];

before(async () => {
  server = createServer((req, res) => {
    received.push(req.headers);
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"name":"whoever"}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => server.close());

function memory(): ApprovalState {
  const map = new Map<string, unknown>();
  return { get: <T>(k: string, d: T): T => (map.has(k) ? (map.get(k) as T) : d), update: async (k, v) => void map.set(k, v) };
}

/** This machine's own proxy settings would route the request elsewhere. */
function noProxies(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !/_proxy$/i.test(k)));
}

/** The host's side: read the env file as the runner does and, holding a Hub token, check it at the Hub endpoint (as publish and staging do). */
function hostUses(envPath: string): Promise<string> {
  const code = [
    'import sys, urllib.request',
    'from remote_finetune.envfile import read_env_file',
    'from remote_finetune.spec import hub_token',
    'env, _ = read_env_file(sys.argv[1])',
    'token = hub_token(env)',
    'if token:',
    '    req = urllib.request.Request(env.get("HF_ENDPOINT", "https://huggingface.co") + "/api/whoami-v2", headers={"authorization": "Bearer " + token})',
    '    urllib.request.urlopen(req, timeout=10).read()',
    'print("token" if token else "no token")',
  ].join('\n');
  return new Promise((res, rej) => {
    const p = spawn('python3', ['-c', code, envPath], { env: { ...noProxies(), PYTHONPATH: RUNNER } });
    let out = '';
    let err = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (err += d.toString()));
    p.on('close', (c) => (c === 0 ? res(out.trim()) : rej(new Error(err))));
  });
}

/**
 * The start path up to the host. `person` answers the Start confirmation: `careful` starts a run whose
 * confirmation names no unapproved host and declines one that does; `approves` approves what it names.
 */
async function start(state: ApprovalState, person: 'careful' | 'approves'): Promise<{ asked: string[]; envText?: string; host?: string }> {
  const asked: string[] = [];
  const r = await confirmRunEnv({ envFileText: `HF_ENDPOINT=${url}\n`, stored: { HF_TOKEN: TOKEN, WANDB_API_KEY: undefined }, spec }, state, async (first) => {
    asked.push(...first.held.map((h) => `${h.redirect.variable} ${h.redirect.host} ${h.secrets.join(',')}`));
    return person === 'approves' || first.held.length === 0;
  });
  if (!r) return { asked };
  const dir = mkdtempSync(join(tmpdir(), 'rft-endpoint-host-'));
  writeFileSync(join(dir, 'env'), renderEnvFile(r.env), { mode: 0o600 });
  return { asked, envText: readFileSync(join(dir, 'env'), 'utf8'), host: await hostUses(join(dir, 'env')) };
}

test('unapproved workspace HF_ENDPOINT: the listener receives nothing and no token is written; the confirmation names the variable and its host', async () => {
  received.length = 0;
  const s = await start(memory(), 'careful');
  assert.deepEqual(
    received.map((h) => String(h.authorization).replace(TOKEN, '<stored HF token>')),
    [],
    "the workspace's server received requests",
  );
  assert.ok(!s.envText?.includes(TOKEN), 'the stored token was written to the env file');
  assert.deepEqual(s.asked, [`HF_ENDPOINT ${url.replace('http://', '')} HF_TOKEN`], 'the confirmation must name the variable and its host');
  assert.equal(s.envText, undefined, 'declined: nothing is written');
});

test('approved once for that origin: the token is in the env file and reaches the server; the approval is remembered', async () => {
  received.length = 0;
  const state = memory();
  const s = await start(state, 'approves');
  assert.equal(s.host, 'token');
  assert.ok(s.envText?.includes(TOKEN), 'the approved token is in the env file');
  assert.deepEqual(
    received.map((h) => h.authorization),
    [`Bearer ${TOKEN}`],
  );
  const again = await start(state, 'careful');
  assert.deepEqual(again.asked, [], 'an approved host is not asked about again');
  assert.equal(again.host, 'token');
});
