// A repository's .vscode/settings.json must not decide where credentials or commands go. The attack is put in
// place for real (a workspace settings file in this VS Code host); what VS Code's plain get() would return is
// shown first, then what the extension reads (features/settings.ts userSetting, the function every such read
// goes through).
import * as assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { userSetting, USER_ONLY_SETTINGS } from '../../../src/features/settings';
import { approveWandbOrigin } from '../../../src/features/panels/metricsPanel';

const HOSTILE: Record<string, unknown> = {
  'remoteFinetune.wandb.baseUrl': 'http://203.0.113.7:8080',
  'remoteFinetune.remotePython': '/tmp/evil-python',
  'remoteFinetune.ssh.configFile': '/tmp/evil_ssh_config',
  'remoteFinetune.lambda.apiUrl': 'http://203.0.113.7/api/v1',
  'remote.SSH.configFile': '/tmp/evil_ssh_config',
};

suite('security: workspace settings', () => {
  test("a repo's .vscode/settings.json cannot point the W&B key, the host interpreter, ssh_config or a cloud API elsewhere", async () => {
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    assert.ok(folder, 'the suite runs in a folder');
    const changed = new Promise<void>((resolve) => {
      const d = vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration('remote.SSH')) {
          d.dispose();
          resolve();
        }
      });
    });
    mkdirSync(join(folder, '.vscode'), { recursive: true });
    writeFileSync(join(folder, '.vscode', 'settings.json'), JSON.stringify(HOSTILE, null, 2));
    await Promise.race([changed, new Promise((r) => setTimeout(r, 10_000))]);
    // The attack is live: VS Code hands out the workspace's value for a setting it does not know the scope of.
    assert.equal(vscode.workspace.getConfiguration('remote.SSH').get('configFile'), '/tmp/evil_ssh_config');
    for (const full of [...USER_ONLY_SETTINGS, 'remote.SSH.configFile']) {
      const i = full.lastIndexOf('.');
      const got = userSetting<unknown>(full.slice(0, i), full.slice(i + 1));
      if (full in HOSTILE) assert.notEqual(got, HOSTILE[full], `${full} was taken from the workspace`);
    }
    assert.equal(userSetting('remote.SSH', 'configFile'), undefined);
    assert.equal(userSetting('remoteFinetune', 'remotePython'), 'python3');
    assert.equal(userSetting('remoteFinetune', 'wandb.baseUrl'), '');
    writeFileSync(join(folder, '.vscode', 'settings.json'), '{}');
  });
});

suite('security: the W&B key and new servers', () => {
  test("a panel (also one restored on startup) gets no key sent to a server the person has not approved; W&B's cloud needs no approval", async () => {
    const values = new Map<string, unknown>();
    const memento = {
      get: <T>(k: string, d?: T): T | undefined => (values.has(k) ? (values.get(k) as T) : d),
      update: async (k: string, v: unknown) => {
        values.set(k, v);
      },
      keys: () => [...values.keys()],
    } as unknown as vscode.Memento;
    const asked: string[] = [];
    assert.equal(
      await approveWandbOrigin(memento, 'https://api.wandb.ai', async (o) => {
        asked.push(o);
        return true;
      }),
      true,
    );
    assert.equal(asked.length, 0, "W&B's own cloud is not asked about");
    assert.equal(
      await approveWandbOrigin(memento, 'https://wandb.evil.example', async (o) => {
        asked.push(o);
        return false;
      }),
      false,
      'refused: no key',
    );
    assert.equal(
      await approveWandbOrigin(memento, 'https://wandb.evil.example', async (o) => {
        asked.push(o);
        return false;
      }),
      false,
      'asked again, never remembered as approved',
    );
    assert.equal(
      await approveWandbOrigin(memento, 'https://wandb.corp.example', async (o) => {
        asked.push(o);
        return true;
      }),
      true,
    );
    assert.equal(
      await approveWandbOrigin(memento, 'https://wandb.corp.example', async () => {
        throw new Error('not asked twice');
      }),
      true,
    );
    assert.deepEqual(asked, ['https://wandb.evil.example', 'https://wandb.evil.example', 'https://wandb.corp.example']);
  });
});
