// The TCP socket under an ssh2 connection. ssh2 hands every encrypted packet to the socket in three or four
// separate writes (length, body, tag), and a bulk upload is tens of thousands of 32 KiB packets per GiB: written
// one by one, that is a syscall each. Writes made in the same tick are corked and leave as one writev when the
// tick ends, so latency is unchanged (nothing waits past the current tick) and the syscall count drops by the
// number of packets ssh2 produces per tick (dozens, for a 1 MiB chunk of a file).
import { Socket } from 'node:net';

/** Makes `sock.write` cork the socket until the end of the current tick. Install after `connect()`. */
export function coalesceWrites(sock: Socket): void {
  const write = sock.write;
  let corked = false;
  const uncork = (): void => {
    corked = false;
    sock.uncork();
  };
  sock.write = function coalescedWrite(this: Socket, ...args: unknown[]): boolean {
    if (!corked && !sock.destroyed) {
      corked = true;
      sock.cork();
      process.nextTick(uncork);
    }
    return (write as (...a: unknown[]) => boolean).apply(sock, args);
  } as Socket['write'];
}

/** Starts connecting a socket whose writes coalesce; ssh2 takes it over as `sock` and waits for its 'connect'. */
export function connectCoalescing(host: string, port: number): Socket {
  const sock = new Socket();
  // net.Socket#connect puts Socket.prototype.write back on the instance (undoing a write-after-end guard), which
  // would drop a wrapper installed earlier or a subclass override: so the wrapper goes on after it.
  sock.connect({ host, port });
  coalesceWrites(sock);
  return sock;
}
