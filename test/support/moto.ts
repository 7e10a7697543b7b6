// moto's server (PyPI moto[server]: AWS's APIs as implemented by others, not by us) on loopback, for the EC2
// provider's real AWS SDK to talk to. The venv is cached outside the clone by scripts/ensure-moto.sh.
import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { freePort } from './sshd';

export interface Moto {
  readonly url: string;
  readonly version: string;
  stop(): Promise<void>;
}

export async function startMoto(): Promise<Moto> {
  const venv = execFileSync('bash', [join(__dirname, '..', '..', 'scripts', 'ensure-moto.sh')], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    timeout: 600_000,
  }).trim();
  const version = execFileSync(join(venv, 'bin', 'python'), ['-c', 'import moto; print(moto.__version__)'], { encoding: 'utf8' }).trim();
  const port = await freePort();
  const child: ChildProcess = spawn(join(venv, 'bin', 'moto_server'), ['-H', '127.0.0.1', '-p', String(port)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => {
    stderr = (stderr + c.toString()).slice(-4000);
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`moto_server exited: ${stderr}`);
    try {
      // moto's own endpoint for its state; answers once the server is up.
      const r = await fetch(`${url}/moto-api/`);
      if (r.status < 500) break;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGTERM');
      throw new Error(`moto_server did not answer on ${url}: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    url,
    version,
    stop: async () => {
      if (child.exitCode !== null) return;
      const gone = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill('SIGTERM');
      await Promise.race([gone, new Promise((r) => setTimeout(r, 3000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}
