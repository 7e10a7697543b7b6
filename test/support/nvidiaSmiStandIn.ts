// A stand-in for the GPU hardware (none exists on this machine or in CI): an executable named `nvidia-smi`,
// put first on the test sshd's PATH, that prints what nvidia-smi documents for the queries the probe makes.
// Tests that use it say so in their names.
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface StandInGpu {
  readonly name: string;
  readonly memoryMiB: number;
}

/** Returns the directory to prepend to PATH. `failing` mimics a host whose driver is not loaded (exit 9). */
export function nvidiaSmiStandIn(gpus: readonly StandInGpu[], opts: { driver?: string; cuda?: string; failing?: boolean } = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'rft-nvsmi-'));
  mkdirSync(dir, { recursive: true });
  const driver = opts.driver ?? '550.54.15';
  const cuda = opts.cuda ?? '12.4';
  const csv = gpus.map((g, i) => `${i}, ${g.name}, ${g.memoryMiB}, ${driver}, GPU-${String(i).padStart(8, '0')}-1111-2222-3333-444455556666`).join('\n');
  const banner = [
    '+-----------------------------------------------------------------------------------------+',
    `| NVIDIA-SMI ${driver}              Driver Version: ${driver}      CUDA Version: ${cuda}     |`,
    '|-----------------------------------------+------------------------+----------------------+',
  ].join('\n');
  const script = opts.failing
    ? '#!/bin/sh\necho "NVIDIA-SMI has failed because it couldn\'t communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running."\nexit 9\n'
    : `#!/bin/sh\ncase "$1" in\n  --query-gpu=*) cat <<'CSV'\n${csv}\nCSV\n  ;;\n  *) cat <<'TXT'\n${banner}\nTXT\n  ;;\nesac\n`;
  writeFileSync(join(dir, 'nvidia-smi'), script);
  chmodSync(join(dir, 'nvidia-smi'), 0o755);
  return dir;
}
