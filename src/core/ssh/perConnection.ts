// Answers that hold for as long as one SSH connection does: asked once per connection, the promise shared by
// every caller. A failed answer is forgotten, so the next caller asks again, and so is one the caller found
// wrong (`forget`); a reconnect is a new session, so nothing outlives the connection it was learned on.
import type { SshSession } from './session';

export interface PerConnection<T> {
  (session: SshSession): Promise<T>;
  /** The next call on this session asks again. */
  forget(session: SshSession): void;
}

export function perConnection<T>(ask: (session: SshSession) => Promise<T>): PerConnection<T> {
  const known = new WeakMap<SshSession, Promise<T>>();
  const get = (session: SshSession): Promise<T> => {
    const had = known.get(session);
    if (had) return had;
    const p = ask(session);
    known.set(session, p);
    p.catch(() => {
      if (known.get(session) === p) known.delete(session);
    });
    return p;
  };
  return Object.assign(get, { forget: (session: SshSession) => void known.delete(session) });
}
