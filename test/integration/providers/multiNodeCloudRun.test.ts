// A multi-node run on a cloud, end to end (issue 36.5): Start Training with launcher.num_machines 2 and
// target.provider gcp launches two instances through the real GcpProvider against the GCP EMULATOR (a test double
// of Compute Engine), whose instances are two network-namespace hosts (test/support/netns.ts), each with its own
// address and its own OpenSSH sshd: the emulator reports node k's address as the k-th namespace's (natIP), its
// networkIP as a second address of that namespace, and the guest attributes publish the hosts' SSH key, so both connections are checked against
// pinned keys. torchrun starts one rank per host with torch's gloo backend on the CPU, rendezvousing at node 0's
// private address. Checked: the firewall rule between the run's nodes exists while it runs; both ranks all-reduce
// (sum 2) and rank 1's log is mirrored; the run completes; teardown ends both instances and deletes the rule.
// Needs root and iproute2 (namespaces): otherwise it skips, saying why.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clusterTagFor } from '../../../src/core/providers/gcp/instances';
import type { Offer } from '../../../src/core/providers/provider';
import { gcpOnSshd } from '../../support/gcpOnSshd';
import { makeNetnsLan, netnsUnavailable } from '../../support/netns';
import type { NetnsLan } from '../../support/netns';
import { runFinished, testRunManager, trustingConnectOptions } from '../../support/runHosts';
import { sshKeygen, startSshd } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';
import { trainingPython } from '../../harness/trainingVenv';

const ALLREDUCE = `import torch, torch.distributed as dist
dist.init_process_group("gloo")
rank = dist.get_rank()
for i in range(5):
    t = torch.ones(1)
    dist.all_reduce(t)
    print("rank %d step %d sum %d" % (rank, i, t.item()), flush=True)
dist.destroy_process_group()
`;

const OFFER: Offer = {
  provider: 'gcp',
  instanceType: 'g2-standard-8',
  gpu: 'L4',
  gpuCount: 1,
  vramGiB: 24,
  region: 'us-central1',
  zone: 'us-central1-a',
  pricePerHour: 0.85,
  spot: false,
  capacity: 'unknown',
};

const skipReason = netnsUnavailable();
const cleanup: Array<() => unknown> = [];

after(async () => {
  for (const f of cleanup.reverse()) {
    try {
      await f();
    } catch (err) {
      console.error(`cleanup: ${(err as Error).message}`);
    }
  }
});

test(
  'multi-node on GCP: 2 instances (namespace hosts) in one zone, ranks rendezvous at node 0 private address, all torn down',
  { timeout: 300_000 },
  async (t) => {
    if (skipReason) return t.skip(skipReason);
    const python = trainingPython();
    const dir = mkdtempSync(join(tmpdir(), 'rft-mncloud-'));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const lan: NetnsLan = makeNetnsLan(2);
    cleanup.push(() => lan.remove());
    sshKeygen(join(dir, 'host_key'));
    sshKeygen(join(dir, 'user_key'));
    const userPub = readFileSync(join(dir, 'user_key.pub'), 'utf8').trim();
    // Each host's VPC address beside the one SSH reaches it at: the rendezvous must take the private one (networkIP).
    const privateOf = (a: string): string => a.replace(/\.(\d+)$/, (_m, n: string) => `.${Number(n) + 100}`);
    for (const h of lan.hosts) execFileSync('ip', ['netns', 'exec', h.name, 'ip', 'addr', 'add', `${privateOf(h.address)}/24`, 'dev', lan.ifname]);
    const sshds: Sshd[] = [];
    for (const h of lan.hosts) {
      const s = await startSshd({ netns: h, hostKeyPath: join(dir, 'host_key'), authorizedKeys: [userPub], env: { RFT_PYTHON: python } });
      sshds.push(s);
    }
    cleanup.push(() => Promise.all(sshds.map((s) => s.stop())));
    // Both hosts have one host key, which the emulator's guest attributes publish for every instance.
    const { emu, provider } = await gcpOnSshd(sshds[0]!, 200);
    cleanup.push(() => emu.stop());
    // Node k gets the k-th namespace's address: the first now, the second once the first launch is through.
    emu.instanceIp = lan.hosts[0]!.address;
    for (const h of lan.hosts) emu.privateIps.set(h.address, privateOf(h.address));
    const storage = join(dir, 'storage');
    const manager = testRunManager(storage, trustingConnectOptions([]), {
      providerFor: () => provider,
      remotePython: python,
      log: (l) => {
        if (/ node 1 of 2: gcp instance /.test(l)) emu.instanceIp = lan.hosts[1]!.address;
        if (process.env.RFT_TEST_LOG) console.error(l);
      },
    });
    cleanup.push(() => manager.dispose());
    const ws = join(dir, 'ws');
    mkdirSync(ws);
    writeFileSync(join(ws, 'allreduce.py'), ALLREDUCE);
    const spec = {
      version: 1,
      name: 'mn-cloud',
      command: 'python allreduce.py',
      launcher: { type: 'torchrun', num_processes: 2, num_machines: 2 },
      target: { provider: 'gcp', gpu: 'L4', zone: 'us-central1-a' },
    };
    const t0 = Date.now();
    const rec = await manager.start({
      specPath: join(ws, 'finetune.yaml'),
      specText: JSON.stringify(spec),
      spec,
      name: 'mn-cloud',
      workspaceDir: ws,
      // Where gloo listens on each host: the namespaces' interface, as a person sets it in their .env.
      env: { GLOO_SOCKET_IFNAME: lan.ifname },
      target: { kind: 'cloud', provider, offer: OFFER, sshPublicKey: userPub, identityFile: join(dir, 'user_key'), sshTimeoutMs: 60_000 },
      gpu: 'L4',
      teardown: { policy: 'terminate' },
    });
    const fin = runFinished(manager, rec.id, 180_000);
    assert.equal(rec.status, 'running');
    assert.equal(rec.host, lan.hosts[0]!.address);
    assert.deepEqual(
      rec.machines?.map((m) => [m.rank, m.host, m.instanceId !== undefined && m.instanceId !== rec.instanceId, (m.pinnedHostKeys ?? []).length > 0]),
      [[1, lan.hosts[1]!.address, true, true]],
    );
    assert.equal(emu.instances.size, 2, 'two instances launched');
    assert.equal(new Set([...emu.instances.values()].map((i) => i.zone)).size, 1, 'in one zone');
    const rule = emu.firewalls.get(clusterTagFor(rec.id)) as { sourceTags?: string[]; targetTags?: string[] } | undefined;
    assert.deepEqual([rule?.sourceTags, rule?.targetTags], [[clusterTagFor(rec.id)], [clusterTagFor(rec.id)]], 'the nodes firewall rule');
    for (const i of emu.instances.values())
      assert.ok((i.request as { tags?: { items?: string[] } }).tags?.items?.includes(clusterTagFor(rec.id)), `${i.name} carries the run tag`);

    const done = await fin;
    console.log(`multi-node GCP run (launch of 2, start, 5 all-reduces, teardown): ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    assert.equal(done.record.status, 'completed', JSON.stringify(done.failure ?? done.record));
    assert.equal(done.record.machines?.[0]?.status, 'completed');
    const specOn = (remoteDir: string | undefined): { launcher: Record<string, unknown> } => JSON.parse(readFileSync(join(remoteDir!, 'spec.json'), 'utf8'));
    for (const [r, d] of [
      [0, done.record.remoteDir],
      [1, done.record.machines![0]!.remoteDir],
    ] as const) {
      const l = specOn(d).launcher;
      assert.equal(l.machine_rank, r);
      assert.equal(l.main_process_ip, privateOf(lan.hosts[0]!.address), 'rendezvous at node 0 private address (networkIP), not the SSH one');
    }
    const log1 = join(done.record.localDir!, 'rank-1', 'output.log');
    assert.ok(existsSync(log1), 'rank 1 mirrored');
    assert.match(readFileSync(log1, 'utf8'), /rank 1 step 4 sum 2/);
    assert.match(readFileSync(join(done.record.localDir!, 'output.log'), 'utf8'), /rank 0 step 4 sum 2/);
    assert.equal(done.record.finishedAction, 'terminated');
    assert.deepEqual(
      emu.billing().map((i) => [i.name, i.state]),
      [],
      'both instances ended',
    );
    assert.equal(emu.firewalls.has(clusterTagFor(rec.id)), false, 'the nodes firewall rule deleted');
  },
);
