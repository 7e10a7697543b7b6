// Which events.jsonl lines the runner itself wrote. The training script runs as the same user, can append to
// events.jsonl (our TrainerCallback reports through it) and prints into output.log; the events the extension acts
// on (a spot notice ends the instance and relaunches the run elsewhere, `finished` decides the outcome, the queue
// and a restored checkpoint change the record) count only when signed with the run's control key. The extension
// makes the key, keeps it in the run record and writes it to the run folder as control.key (0600) before the run
// starts; the runner takes it and removes the file before any child exists (python-runner/remote_finetune/
// control_key.py). The line form: the event's JSON as written, with `,"mac":"<64 hex>"` before its closing brace,
// an HMAC-SHA256 over the line without that field.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { RunEvent } from './events';

const MAC_TAIL = /,"mac":"([0-9a-f]{64})"\}\s*$/;

export function newControlKey(): string {
  return randomBytes(32).toString('hex');
}

/** True when `line` carries a valid MAC made with `keyHex`. */
export function runnerSigned(line: string, keyHex: string): boolean {
  const m = MAC_TAIL.exec(line);
  if (!m) return false;
  const body = `${line.slice(0, m.index)}}`;
  const want = createHmac('sha256', Buffer.from(keyHex, 'hex')).update(body, 'utf8').digest();
  return timingSafeEqual(want, Buffer.from(m[1]!, 'hex'));
}

/** The events the extension acts on, as opposed to the ones it only shows. */
export function isControlEvent(e: RunEvent): boolean {
  if (e.type === 'finished' || e.type === 'queued' || e.type === 'assigned') return true;
  return e.type === 'warning' && (e.code === 'spot-notice' || e.code === 'checkpoint-restored');
}

/**
 * Whether an event may be acted on: any event that is not a control event; a control event only with the run's
 * MAC. A run with no key (found on a host, or started before keys existed) has nothing to check against.
 */
export function mayActOn(line: string, e: RunEvent, keyHex: string | undefined): boolean {
  return !isControlEvent(e) || keyHex === undefined || runnerSigned(line, keyHex);
}
