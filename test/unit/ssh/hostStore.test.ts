import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HostStore, HOSTS_KEY } from '../../../src/features/hosts/hostStore';
import type { MementoLike } from '../../../src/features/hosts/hostStore';

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

test('HostStore keeps hosts sorted, replaces by name, exposes probed GPU names, and fires changes', async () => {
  const m = memento();
  const store = new HostStore(m);
  let fired = 0;
  store.onDidChange(() => fired++);
  await store.upsert({ host: 'z-host', addedAt: '2026-01-01T00:00:00Z' });
  await store.upsert({
    host: 'lambda-a100',
    addedAt: '2026-01-01T00:00:00Z',
    probe: {
      kind: 'nvidia',
      count: 1,
      driverVersion: '535',
      cudaVersion: '12.2',
      gpus: [{ index: 0, name: 'NVIDIA A100-SXM4-40GB', memoryTotalMiB: 40960, uuid: 'GPU-1' }],
    },
  });
  await store.upsert({
    host: 'z-host',
    addedAt: '2026-01-01T00:00:00Z',
    probe: { kind: 'none', reason: 'No NVIDIA GPU: nvidia-smi is not installed on this host.' },
  });
  assert.deepEqual(
    store.list().map((h) => h.host),
    ['lambda-a100', 'z-host'],
  );
  // Probed with no NVIDIA GPU is an empty list, not "never probed".
  assert.deepEqual(store.knownHosts(), [
    { host: 'lambda-a100', gpus: ['NVIDIA A100-SXM4-40GB'] },
    { host: 'z-host', gpus: [] },
  ]);
  await store.remove('z-host');
  assert.deepEqual(
    store.list().map((h) => h.host),
    ['lambda-a100'],
  );
  assert.equal(fired, 4);
});

test('HostStore ignores malformed stored data instead of throwing', () => {
  const store = new HostStore(memento({ [HOSTS_KEY]: [{ host: 'ok', addedAt: 'x' }, { host: 3 }, null, 'junk'] }));
  assert.deepEqual(
    store.list().map((h) => h.host),
    ['ok'],
  );
  assert.deepEqual(new HostStore(memento({ [HOSTS_KEY]: 'nope' })).list(), []);
});
