import { test } from 'node:test';
import assert from 'node:assert/strict';
import { wandbBaseUrlProblem } from '../../../src/core/telemetry/wandb';

test('W&B base URL: the key goes only over https, or http to this machine', () => {
  for (const ok of ['https://api.wandb.ai', 'https://wandb.corp.example:8443/', 'http://127.0.0.1:8080', 'http://localhost:9000'])
    assert.equal(wandbBaseUrlProblem(ok), undefined, ok);
  for (const bad of ['http://203.0.113.7:8080', 'http://wandb.corp.example', 'ftp://x', 'https://user:pw@evil.example', 'not a url', 'javascript:alert(1)']) {
    assert.ok(wandbBaseUrlProblem(bad), bad);
  }
});
