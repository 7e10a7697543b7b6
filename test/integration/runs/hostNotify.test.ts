// The end-of-run notification is sent by the host, not by VS Code: against a real OpenSSH server on
// loopback, a run is started and the manager disposed at once (VS Code closed, laptop asleep); the real
// python-runner on the host posts to a loopback HTTP receiver standing in for a Slack/Discord webhook when
// training ends. The target comes from the user's settings (RunManagerDeps.notifyEnv); one set by the
// workspace's .env is dropped. The GPU is an nvidia-smi STAND-IN (no GPU here).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startSshd } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';
import { ownScriptWorkspace, sshStartRequest, testRunManager, trustingConnectOptions, until } from '../../support/runHosts';
import { notifyEnv } from '../../../src/core/runs/hosts/hostNotify';
import type { ConnectOptions } from '../../../src/core/ssh/session';

const REPO = resolve(__dirname, '../../..');
let sshd: Sshd;
let connectOptions: ConnectOptions;

interface Post {
  readonly path: string;
  readonly body: string;
}

function receiver(): Promise<{ server: Server; url: string; posts: Post[] }> {
  const posts: Post[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      posts.push({ path: req.url ?? '', body: Buffer.concat(chunks).toString('utf8') });
      res.end();
    });
  });
  return new Promise((res) => server.listen(0, '127.0.0.1', () => res({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, posts })));
}

before(async () => {
  sshd = await startSshd({ pathPrepend: [join(REPO, 'test/support/standins')] });
  connectOptions = trustingConnectOptions([sshd]);
});
after(async () => {
  await sshd?.stop();
});

test(
  "host notify: the host posts the outcome to the user's webhook after VS Code is gone; a workspace .env target refuses the start",
  { timeout: 180_000 },
  async () => {
    const user = await receiver();
    const workspaceHook = await receiver();
    const secretPath = '/services/T0/B0/wEbHoOkSeCrEt0123';
    const settings = notifyEnv({ webhookUrl: `${user.url}${secretPath}` });
    assert.deepEqual(settings.problems, []);
    const storage = mkdtempSync(join(tmpdir(), 'rft-storage-'));
    const m = testRunManager(storage, connectOptions, { notifyEnv: () => settings.env });
    const ws = ownScriptWorkspace();
    // As if the workspace's .env tried to read every run's outcome: the start is refused (RFT610), naming both.
    const hostile = {
      HF_TOKEN: 'hf_notifyTESTsecret0123456789',
      RFT_NOTIFY_WEBHOOK: `${workspaceHook.url}/steal`,
      RFT_NOTIFY_NTFY_URL: `${workspaceHook.url}/steal-ntfy`,
    };
    await assert.rejects(
      m.start(sshStartRequest(sshd, ws, 'notify-me', 'python3 train.py --steps 8 --sleep 0.2', { env: hostile })),
      /RFT_NOTIFY_WEBHOOK, RFT_NOTIFY_NTFY_URL.*RFT610/s,
    );
    const rec = await m.start(sshStartRequest(sshd, ws, 'notify-me', 'python3 train.py --steps 8 --sleep 0.2', { env: { HF_TOKEN: hostile.HF_TOKEN } }));
    assert.equal(rec.status, 'running');
    await m.dispose(); // VS Code closed: nothing on the laptop watches the run any more

    await until('the webhook POST', () => user.posts.length > 0, 90_000);
    const post = user.posts[0]!;
    assert.equal(post.path, secretPath);
    const payload = JSON.parse(post.body) as { text: string; run: { run_id: string; status: string; step?: number; exit_code?: number } };
    assert.match(payload.text, /^notify-me completed on \S+: after \d+m\d\ds, step \d+, loss [\d.]+/);
    assert.equal(payload.run.run_id, rec.id);
    assert.equal(payload.run.status, 'completed');
    assert.equal(payload.run.exit_code, 0);
    assert.equal(user.posts.length, 1);
    assert.equal(workspaceHook.posts.length, 0, 'the workspace .env target got the outcome');

    // On the host the target lives only in the 0600 env file: not in the spec, the log or the events.
    const remoteRun = join(sshd.home, '.remote-finetune', 'runs', rec.id);
    for (const name of readdirSync(remoteRun)) {
      const p = join(remoteRun, name);
      if (!statSync(p).isFile()) continue;
      const text = readFileSync(p, 'utf8');
      if (name === 'env') {
        assert.equal(statSync(p).mode & 0o777, 0o600);
        assert.ok(text.includes(secretPath), 'the env file carries the target');
        assert.ok(!text.includes('/steal'), 'the workspace target reached the host');
      } else {
        assert.ok(!text.includes(secretPath), `the webhook URL is in ${name}`);
      }
    }
    user.server.close();
    workspaceHook.server.close();
  },
);
