// No blind first use on EC2: the extension makes the instance's host key, puts it in the RunInstances
// user-data as cloud-config, and checks the first connection against it. The cloud is the EC2 EMULATOR
// (test/emulators/ec2.ts, a test double of EC2's Query API); what cloud-init would do on the instance is
// done here: the loopback sshd that plays the instance is started with the host key found in the user-data
// (cc_ssh's `ssh_keys.ed25519_private`). The run then goes through RunManager with the real SSH stack.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse } from 'yaml';
import { startSshd, sshKeygen } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';
import { RunManager } from '../../../src/core/runs/lifecycle/runManager';
import type { RunFinished } from '../../../src/core/runs/lifecycle/runManager';
import { RunStore } from '../../../src/core/runs/store/runStore';
import { Ledger } from '../../../src/core/runs/store/ledger';
import { sshSync } from '../../../src/core/runs/sync/runSync';
import { makeRig } from './harness';

const REPO = resolve(__dirname, '../../..');
const servers: Sshd[] = [];
after(async () => {
  for (const s of servers) await s.stop();
});

async function freePort(): Promise<number> {
  return await new Promise((res) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const p = (srv.address() as { port: number }).port;
      srv.close(() => res(p));
    });
  });
}

/** Plays cloud-init: once the emulator holds an instance, boots "it" (an sshd) with the host key from its user-data. */
async function bootFromUserData(rig: Awaited<ReturnType<typeof makeRig>>, port: number, userPub: string, dir: string, honour: boolean): Promise<Sshd> {
  const emu = rig.emu as unknown as { instances: Map<string, { request: URLSearchParams }> };
  for (let i = 0; i < 400 && emu.instances.size === 0; i++) await new Promise((r) => setTimeout(r, 25));
  const inst = [...emu.instances.values()][0]!;
  const userData = Buffer.from(inst.request.get('UserData') ?? '', 'base64').toString('utf8');
  assert.match(userData, /^#cloud-config\n/);
  assert.equal(inst.request.get('MetadataOptions.HttpTokens'), 'required', 'IMDSv2 only');
  assert.equal(inst.request.get('BlockDeviceMapping.1.Ebs.Encrypted'), 'true', 'encrypted root volume');
  const keys = (parse(userData) as { ssh_keys: { ed25519_private: string } }).ssh_keys;
  const hostKey = join(dir, 'instance_host_key');
  if (honour) {
    writeFileSync(hostKey, keys.ed25519_private, { mode: 0o600 });
    writeFileSync(`${hostKey}.pub`, `${(parse(userData) as { ssh_keys: { ed25519_public: string } }).ssh_keys.ed25519_public}\n`);
  } else {
    sshKeygen(hostKey); // something else answers at the address, with its own key
  }
  const s = await startSshd({ port, hostKeyPath: hostKey, authorizedKeys: [userPub], pathPrepend: [join(REPO, 'test/support/standins')] });
  servers.push(s);
  return s;
}

async function scenario(
  honour: boolean,
): Promise<{ finished?: RunFinished; error?: Error; prompts: number; pinned?: readonly string[]; rig: Awaited<ReturnType<typeof makeRig>> }> {
  const port = await freePort();
  const rig = await makeRig('ec2', port, 2000);
  const dir = mkdtempSync(join(tmpdir(), 'rft-pin-'));
  const userKey = join(dir, 'user_key');
  sshKeygen(userKey);
  const userPub = readFileSync(`${userKey}.pub`, 'utf8').trim();
  let prompts = 0;
  const storage = join(dir, 'storage');
  // The person's ssh_config names the user for the instance's address (the image default would be ubuntu).
  writeFileSync(join(dir, 'ssh_config'), `Host 127.0.0.1\n  User ${process.env.USER ?? 'root'}\n`);
  const m = new RunManager({
    store: new RunStore(join(storage, 'runs.json')),
    storageDir: storage,
    runnerDir: join(REPO, 'python-runner'),
    runnerVersion: 'test',
    connectOptions: {
      hostKeyStore: join(dir, 'store_known_hosts'),
      knownHostsFiles: [],
      globalKnownHostsFiles: [],
      agentSocket: null,
      sshConfigPath: join(dir, 'ssh_config'),
      confirmHostKey: async () => {
        prompts++;
        return true;
      },
    },
    ledger: new Ledger(join(storage, 'instances.json')),
    sync: sshSync(join(storage, 'sync-cache')),
    providerFor: () => rig.provider,
  });
  const ws = mkdtempSync(join(tmpdir(), 'rft-pin-ws-'));
  cpSync(join(REPO, 'examples/demo-host-own-script/train.py'), join(ws, 'train.py'));
  const spec = {
    version: 1,
    name: 'pinned',
    command: 'python train.py --steps 3 --sleep 0.05',
    target: { provider: 'ec2', gpu: 'A10G' },
    outputs: { dir: 'outputs' },
  };
  const booting = bootFromUserData(rig, port, userPub, dir, honour);
  const offer = {
    provider: 'ec2' as const,
    instanceType: rig.instanceType,
    gpu: 'A10G',
    gpuCount: 1,
    vramGiB: 24,
    region: rig.region,
    pricePerHour: 1.0,
    spot: false,
    capacity: 'unknown' as const,
  };
  const done = new Promise<RunFinished>((res) => m.onFinished(res));
  try {
    const rec = await m.start({
      specPath: join(ws, 'finetune.yaml'),
      specText: JSON.stringify(spec),
      spec,
      name: 'pinned',
      workspaceDir: ws,
      env: {},
      target: { kind: 'cloud', provider: rig.provider, offer, sshPublicKey: userPub, identityFile: userKey, sshTimeoutMs: 20_000 },
      gpu: 'A10G',
      teardown: { policy: 'terminate' },
    });
    await booting;
    const finished = await Promise.race([done, new Promise<never>((_, rej) => setTimeout(() => rej(new Error('run did not finish')), 90_000))]);
    return { finished, prompts, pinned: m.store.get(rec.id)?.pinnedHostKeys, rig };
  } catch (e) {
    await booting.catch(() => undefined);
    return { error: e as Error, prompts, rig };
  } finally {
    await m.dispose();
    await rig.emu.stop();
  }
}

test('EC2: the host key the extension put in the user-data is the one checked; nothing is asked; the run completes', { timeout: 150_000 }, async () => {
  const r = await scenario(true);
  assert.equal(r.error, undefined, String(r.error?.stack));
  assert.equal(r.finished?.record.status, 'completed', JSON.stringify(r.finished?.record));
  assert.equal(r.prompts, 0, 'no trust-on-first-use prompt');
  assert.equal(r.finished?.record.pinnedHostKeys?.length, 1);
  assert.match(r.finished!.record.pinnedHostKeys![0]!, /^ssh-ed25519 /);
});

test("EC2: another key at the instance's address is refused before anything is sent, and the instance is terminated", { timeout: 150_000 }, async () => {
  const r = await scenario(false);
  assert.ok(r.error, 'the run must not start');
  assert.match(String(r.error), /not the one this instance was launched with/);
  assert.equal(r.prompts, 0, 'not offered for trust either');
  const emu = r.rig.emu as unknown as { instances: Map<string, { state: string }> };
  // Terminate was called and EC2 accepted it (the emulator says terminating, then terminated, as EC2 does).
  const states = [...emu.instances.values()].map((i) => i.state);
  assert.ok(states.length === 1 && states.every((st) => st === 'terminated' || st === 'terminating'), `no instance left running: ${states.join(', ')}`);
});
