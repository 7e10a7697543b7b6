import { test } from 'node:test';
import assert from 'node:assert/strict';
import { notifyEnv, withoutNotifyTargets } from '../../../src/core/runs/hosts/hostNotify';

test("host notify: https webhook and ntfy topic become the runner's variables; ntfy.sh is the default server", () => {
  const n = notifyEnv({ webhookUrl: ' https://hooks.slack.com/services/T0/B0/x ', ntfyTopic: 'rft-9Zq_7' });
  assert.deepEqual(n.problems, []);
  assert.deepEqual(n.env, { RFT_NOTIFY_WEBHOOK: 'https://hooks.slack.com/services/T0/B0/x', RFT_NOTIFY_NTFY_URL: 'https://ntfy.sh/rft-9Zq_7' });
  assert.equal(notifyEnv({ ntfyTopic: 't', ntfyServer: 'https://ntfy.example.org/' }).env.RFT_NOTIFY_NTFY_URL, 'https://ntfy.example.org/t');
  assert.deepEqual(notifyEnv({}).env, {});
  assert.deepEqual(notifyEnv({ webhookUrl: '', ntfyTopic: '  ' }), { env: {}, problems: [] });
});

test('host notify: plain http leaves the host only to its own loopback; bad topics and non-URLs are named, never echoed', () => {
  assert.equal(notifyEnv({ webhookUrl: 'http://127.0.0.1:8080/h' }).env.RFT_NOTIFY_WEBHOOK, 'http://127.0.0.1:8080/h');
  const secret = 'http://hooks.example.com/s3cr3t';
  const bad = notifyEnv({ webhookUrl: secret, ntfyTopic: 'a/b?c', ntfyServer: 'https://ntfy.sh' });
  assert.deepEqual(bad.env, {});
  assert.equal(bad.problems.length, 2);
  assert.match(bad.problems[0]!, /webhook URL must be https/);
  assert.match(bad.problems[1]!, /ntfy topic may hold only/);
  for (const p of bad.problems) assert.ok(!p.includes('s3cr3t'), p);
  assert.match(notifyEnv({ webhookUrl: 'not a url' }).problems[0]!, /is not a URL/);
  assert.match(notifyEnv({ ntfyTopic: 'ok', ntfyServer: 'ftp://x' }).problems[0]!, /ntfy server must be https/);
  assert.match(notifyEnv({ ntfyTopic: 'x'.repeat(65) }).problems[0]!, /at most 64/);
});

test('host notify: a workspace env loses every RFT_NOTIFY_ variable and keeps the rest', () => {
  assert.deepEqual(withoutNotifyTargets({ HF_TOKEN: 'h', RFT_NOTIFY_WEBHOOK: 'x', RFT_NOTIFY_NTFY_URL: 'y', RFT_NOTIFY_OTHER: 'z', BATCH: '4' }), {
    HF_TOKEN: 'h',
    BATCH: '4',
  });
});
