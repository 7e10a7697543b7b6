import { randomBytes } from 'node:crypto';

/** rft-YYYYMMDD-HHMMSS-xxxx: sorts by start time, unique across machines, safe in paths and shells. */
export function newRunId(now: Date = new Date()): string {
  const p = (n: number): string => String(n).padStart(2, '0');
  const d = `${now.getUTCFullYear()}${p(now.getUTCMonth() + 1)}${p(now.getUTCDate())}`;
  const t = `${p(now.getUTCHours())}${p(now.getUTCMinutes())}${p(now.getUTCSeconds())}`;
  return `rft-${d}-${t}-${randomBytes(2).toString('hex')}`;
}
