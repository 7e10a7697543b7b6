// A local port that reaches a port on the host through the run's own SSH connection (what `ssh -L` does), so
// a web UI that listens only on the host's 127.0.0.1 (TensorBoard) opens in the editor without exposing it on
// the host's network or opening a second login. Each accepted socket asks for the host's current session, so
// a forward outlives a reconnect.
import { createServer } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import type { SshSession } from './session';

export interface LocalForward {
  readonly localPort: number;
  /** Stops listening and ends every open forwarded socket. */
  close(): Promise<void>;
}

export async function forwardLocalPort(
  session: () => Promise<SshSession>,
  remoteHost: string,
  remotePort: number,
  log?: (line: string) => void,
): Promise<LocalForward> {
  const sockets = new Set<Socket>();
  const server = createServer((sock) => {
    sockets.add(sock);
    sock.once('close', () => sockets.delete(sock));
    sock.pause();
    session()
      .then(
        (s) =>
          new Promise<void>((resolve, reject) => {
            s.client.forwardOut('127.0.0.1', sock.remotePort ?? 0, remoteHost, remotePort, (err, ch) => {
              if (err) return reject(err);
              ch.on('error', () => sock.destroy());
              sock.on('error', () => ch.close());
              ch.once('close', () => sock.end());
              sock.once('close', () => ch.close());
              sock.pipe(ch).pipe(sock);
              sock.resume();
              resolve();
            });
          }),
      )
      .catch((err: unknown) => {
        log?.(`forward to ${remoteHost}:${remotePort} refused: ${(err as Error).message}`);
        sock.destroy();
      });
  });
  // Loopback only: the forwarded service has no authentication of its own.
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const localPort = (server.address() as AddressInfo).port;
  return {
    localPort,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
