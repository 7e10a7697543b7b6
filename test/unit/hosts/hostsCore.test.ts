import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ProbeCache, PROBES_KEY, isFresh, newest, PROBE_TTL_MS } from '../../../src/core/hosts/probeCache';
import type { MementoLike, ProbeEntry } from '../../../src/core/hosts/probeCache';
import { gpuMatches, hostGpuWarning } from '../../../src/core/hosts/gpuCheck';
import { mergeKnownHosts, gpuSummary } from '../../../src/core/hosts/hostSources';
import { fixForProblem, validateSettingValue } from '../../../src/core/runs/hosts/targetFixes';
import type { GpuProbeResult } from '../../../src/core/ssh/gpuProbe';

function memento(initial: Record<string, unknown> = {}): MementoLike & { data: Record<string, unknown> } {
  const data = { ...initial };
  return {
    data,
    get: <T>(k: string) => data[k] as T | undefined,
    update: async (k: string, v: unknown) => {
      data[k] = v;
    },
  };
}

const a100: GpuProbeResult = {
  kind: 'nvidia',
  count: 2,
  driverVersion: '550.54.15',
  cudaVersion: '12.4',
  gpus: [0, 1].map((index) => ({ index, name: 'NVIDIA A100-SXM4-40GB', memoryTotalMiB: 40960, uuid: `GPU-${index}` })),
};
const t4: GpuProbeResult = {
  kind: 'nvidia',
  count: 1,
  driverVersion: '535',
  cudaVersion: null,
  gpus: [{ index: 0, name: 'Tesla T4', memoryTotalMiB: 15360, uuid: 'GPU-t4' }],
};
const none: GpuProbeResult = { kind: 'none', reason: 'No NVIDIA GPU: nvidia-smi is not installed on this host.' };

test('ProbeCache keeps one entry per host, newest first, fires changes and drops malformed stored data', async () => {
  const m = memento({
    [PROBES_KEY]: [{ host: 'old', probedAt: '2026-01-01T00:00:00Z', probe: none }, { host: 3 }, null, { host: 'x', probedAt: 'y', probe: { kind: 'nvidia' } }],
  });
  const cache = new ProbeCache(m);
  assert.deepEqual(
    cache.all().map((e) => e.host),
    ['old'],
  );
  let fired = 0;
  cache.onDidChange(() => fired++);
  await cache.set('a', a100, new Date('2026-11-25T10:00:00Z'));
  await cache.set('old', t4, new Date('2026-11-25T11:00:00Z'));
  assert.deepEqual(
    cache.all().map((e) => e.host),
    ['old', 'a'],
  );
  assert.equal(cache.get('old')?.probe, t4);
  assert.equal(cache.get('missing'), undefined);
  assert.equal(fired, 2);
});

test('a probe is fresh for PROBE_TTL_MS, stale after, and an unreadable or future time is stale', () => {
  const at = Date.parse('2026-11-25T10:00:00Z');
  const e = { probedAt: '2026-11-25T10:00:00.000Z' };
  assert.equal(isFresh(e, at + 1000), true);
  assert.equal(isFresh(e, at + PROBE_TTL_MS - 1), true);
  assert.equal(isFresh(e, at + PROBE_TTL_MS), false);
  assert.equal(isFresh(e, at - 60_000), false);
  assert.equal(isFresh({ probedAt: 'yesterday' }, at), false);
  assert.equal(isFresh(undefined, at), false);
  const older: ProbeEntry = { host: 'h', probe: none, probedAt: '2026-11-25T09:00:00Z' };
  const newer: ProbeEntry = { host: 'h', probe: a100, probedAt: '2026-11-25T10:00:00Z' };
  assert.equal(newest(older, newer), newer);
  assert.equal(newest(newer, older), newer);
  assert.equal(newest(undefined, older), older);
});

test('gpuMatches compares catalog families with nvidia-smi names, and never matches an empty family', () => {
  assert.equal(gpuMatches('NVIDIA A100-SXM4-80GB', 'A100-40GB'), true);
  assert.equal(gpuMatches('Tesla T4', 'T4'), true);
  assert.equal(gpuMatches('Tesla T4', 'A100-80GB'), false);
  assert.equal(gpuMatches('NVIDIA H100 80GB HBM3', 'H100-80GB'), true);
  assert.equal(gpuMatches('Tesla T4', ''), false);
});

test('hostGpuWarning: no NVIDIA GPU, another GPU, an unreachable host warn; the asked GPU does not', () => {
  assert.deepEqual(hostGpuWarning('demo-host', { probe: none }, ['A100-40GB']), {
    message: 'demo-host has no NVIDIA GPU — start anyway?',
    detail: none.reason,
  });
  const other = hostGpuWarning('gcp-t4', { probe: t4 }, ['A100-40GB', 'A100-80GB']);
  assert.equal(other?.message, 'gcp-t4 has Tesla T4, not the A100 this run asks for — start anyway?');
  assert.match(other?.detail ?? '', /A100-40GB \/ A100-80GB/);
  assert.equal(hostGpuWarning('lambda', { probe: a100 }, ['A100-80GB']), undefined);
  assert.equal(hostGpuWarning('lambda', { probe: t4 }, []), undefined, 'no GPU asked: any NVIDIA GPU will do');
  assert.match(hostGpuWarning('lambda', { probe: none }, [])?.message ?? '', /no NVIDIA GPU/);
  assert.deepEqual(hostGpuWarning('far', { error: 'connect ECONNREFUSED' }, ['T4']), {
    message: 'The GPUs of far could not be checked — start anyway?',
    detail: 'connect ECONNREFUSED',
  });
});

test('mergeKnownHosts: each host once, spec host first, then hosts with the asked GPU, then saved, runs, ssh_config', () => {
  const probes: Record<string, ProbeEntry> = {
    'cfg-a100': { host: 'cfg-a100', probe: a100, probedAt: '2026-11-25T10:00:00Z' },
    saved1: { host: 'saved1', probe: t4, probedAt: '2026-11-25T10:00:00Z' },
  };
  const list = mergeKnownHosts(
    { spec: 'demo-host', saved: ['saved1', 'demo-host'], runs: ['run-host', 'saved1'], sshConfig: ['cfg-t4', 'cfg-a100', 'demo-host'] },
    (h) => probes[h],
    ['A100-40GB'],
  );
  assert.deepEqual(
    list.map((e) => e.host),
    ['demo-host', 'cfg-a100', 'saved1', 'run-host', 'cfg-t4'],
  );
  assert.deepEqual(list[0]?.sources, ['spec', 'saved', 'ssh_config']);
  assert.deepEqual(list.find((e) => e.host === 'saved1')?.sources, ['saved', 'run']);
  // No GPU asked: sources' order only.
  assert.deepEqual(
    mergeKnownHosts({ saved: [], runs: [' r '], sshConfig: ['cfg-t4', 'cfg-a100', ''] }, (h) => probes[h]).map((e) => e.host),
    ['r', 'cfg-t4', 'cfg-a100'],
  );
  assert.equal(gpuSummary({ probe: probes['cfg-a100'] }), '2 × NVIDIA A100-SXM4-40GB (40 GiB)');
  assert.equal(gpuSummary({}), 'GPUs not probed yet');
  assert.equal(gpuSummary({ probe: { host: 'x', probe: none, probedAt: '' } }), 'no NVIDIA GPU');
});

test('a missing cloud credential becomes a fix item that prompts for it; unknown problems stay plain', () => {
  assert.deepEqual(fixForProblem('Lambda Cloud: no API key (Fine-Tune: Set Lambda Cloud API Key)')?.fix, {
    kind: 'command',
    command: 'remoteFinetune.setLambdaApiKey',
  });
  assert.equal(fixForProblem('AWS EC2: no region (set remoteFinetune.aws.region or AWS_REGION)')?.fix.kind, 'setting');
  assert.equal(fixForProblem('GCP: needs remoteFinetune.gcp.project and Application Default Credentials')?.label, 'GCP: set project…');
  assert.equal(fixForProblem('lambda: HTTP 503 from the offers API'), undefined);
  assert.equal(validateSettingValue('remoteFinetune.aws.region', 'us-east-1'), undefined);
  assert.ok(validateSettingValue('remoteFinetune.aws.region', 'us east; rm -rf'));
  assert.equal(validateSettingValue('remoteFinetune.gcp.project', 'my-project-123'), undefined);
  assert.ok(validateSettingValue('remoteFinetune.gcp.project', 'X'));
});
