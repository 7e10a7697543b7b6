// Byte-offset tails of a run's files (output.log, events.jsonl, gpu.csv). Each batch carries the offsets it
// covers, so a consumer that stores nextOffset resumes exactly there after a reconnect. Batches end at a line
// end (a trailing partial line waits for its newline or the end of the run; a log's progress bar goes out at each
// carriage return; a runaway line goes out once it is MAX_PENDING long). The exec channel is
// read by pull, so a slow consumer stops ssh2's window adjustments and the remote `tail` blocks on write:
// nothing buffers without bound.
import type { ClientChannel } from 'ssh2';
import type { SshHost } from './reconnect';
import { shellQuote } from './quote';
import { noAnswerError } from './commandLimits';

export type TailItem =
  | { readonly kind: 'data'; readonly offset: number; readonly nextOffset: number; readonly data: Buffer }
  | { readonly kind: 'truncated'; readonly offset: number; readonly size: number }
  | { readonly kind: 'reconnected'; readonly offset: number; readonly attempt: number }
  /** The connection dropped mid-stream (or a keepalive went unanswered); the tail is reconnecting from `offset`. */
  | { readonly kind: 'dropped'; readonly offset: number };

export interface TailOptions {
  /** Byte offset to start from (the nextOffset of the last batch handled). */
  readonly fromOffset?: number;
  /**
   * Keep following while this remote pid lives (the run's wrapper), then drain and end. Without it the tail
   * ends at the current end of file.
   */
  readonly untilPid?: number;
  /** Follow forever (until aborted), e.g. for a run started elsewhere whose pid is unknown. */
  readonly follow?: boolean;
  readonly signal?: AbortSignal;
  /**
   * For a human-readable log: also deliver up to a carriage return (a tqdm progress bar rewrites one line with
   * \r and may not end it for hours). Bytes still arrive exactly once and in order; only the batch boundaries
   * move. Files of records (events.jsonl, gpu.csv) get whole lines, unless one exceeds MAX_PENDING.
   */
  readonly partialLines?: boolean;
  /** How long the host may take to print the size header (default TAIL_HEADER_TIMEOUT_MS); after that the tail fails. */
  readonly headerTimeoutMs?: number;
  /** Exposes the channel's buffered byte count, so tests can see that backpressure holds. */
  readonly stats?: { buffered: number; maxBuffered: number; channels: number };
}

const HEADER = /^RFT-TAIL (-?\d+)\n/;
/** "RFT-TAIL <size>\n" is under 32 bytes: more without a line end is not our header. */
const MAX_HEADER_BYTES = 64;
/** The header is the command's first act (a stat); a host silent this long is not going to answer. */
export const TAIL_HEADER_TIMEOUT_MS = 60_000;

/** The remote command: report the file size first (truncation check), then stream from offset. */
export function tailCommand(path: string, offset: number, untilPid?: number, follow?: boolean): string {
  const f = shellQuote(path);
  const mode = untilPid !== undefined ? `-F --pid=${Math.trunc(untilPid)} -s 0.2` : follow ? '-F -s 0.2' : '';
  return (
    `size=$(stat -c %s ${f} 2>/dev/null || echo -1); printf 'RFT-TAIL %s\\n' "$size"; ` +
    // A file that does not exist yet (size -1) is not a truncation: in follow mode tail -F waits for it.
    `if [ "$size" -ge 0 ] && [ "$size" -lt ${offset} ]; then exit 0; fi; ` +
    (mode === '' ? `[ "$size" -ge 0 ] || exit 3; ` : '') +
    `exec tail -c +${offset + 1} ${mode} ${f}`
  );
}

/** An unterminated line longer than this is delivered as it stands, so no buffer here grows without bound. */
export const MAX_PENDING = 256 * 1024;

/**
 * How many bytes of `buf` to deliver now: through the last newline; with `partial`, through a later carriage
 * return too, unless it is the buffer's last byte (a \r\n pair is never split, so CRLF logs stay whole lines);
 * and everything once an unterminated tail exceeds MAX_PENDING (a binary blob or a runaway line).
 */
export function deliverableBytes(buf: Buffer, partial: boolean): number {
  const nl = buf.lastIndexOf(0x0a) + 1;
  const cr = partial && buf.length >= 2 ? buf.lastIndexOf(0x0d, buf.length - 2) + 1 : 0;
  const cut = Math.max(nl, cr);
  return buf.length - cut > MAX_PENDING ? buf.length : cut;
}

/** Splits a data batch into lines (without their newline); the last may lack one at the end of a run. */
export function splitLines(data: Buffer): string[] {
  const text = data.toString('utf8');
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/**
 * Tails `path` on `host` by byte offset, reconnecting (through SshHost's backoff) whenever the connection
 * drops, and yields each byte of the file exactly once, in order, as complete lines.
 */
export async function* tailFile(host: SshHost, path: string, options: TailOptions = {}): AsyncGenerator<TailItem, void, undefined> {
  let offset = options.fromOffset ?? 0;
  let attempt = 0;
  let openFailures = 0;
  for (;;) {
    if (options.signal?.aborted) return;
    const session = await host.session(options.signal);
    if (attempt > 0) yield { kind: 'reconnected', offset, attempt };
    attempt++;
    let ch: ClientChannel;
    try {
      ch = await session.execStream(tailCommand(path, offset, options.untilPid, options.follow));
      openFailures = 0;
    } catch {
      // The channel was refused (a dying connection, a server at its limit): try again, but not in a tight loop.
      await new Promise((r) => setTimeout(r, Math.min(2000, 50 * 2 ** openFailures++)));
      continue;
    }
    if (options.stats) options.stats.channels++;
    let truncatedSeen = false;
    const exit = session.exitOf(ch);
    ch.stderr.on('data', (d: Buffer) => {
      if (/file truncated/.test(d.toString('utf8'))) {
        truncatedSeen = true;
        ch.close();
      }
    });
    const onAbort = (): void => {
      ch.close();
    };
    options.signal?.addEventListener('abort', onAbort, { once: true });
    const what = `tailing ${path}`;
    const headerMs = options.headerTimeoutMs ?? TAIL_HEADER_TIMEOUT_MS;
    let silent = false;
    // Raced against each read until the header is in: a host that ignores the close would otherwise keep the read waiting.
    let headerTimer: NodeJS.Timeout | undefined;
    const headerLate = new Promise<IteratorResult<Buffer>>((resolve) => {
      headerTimer = setTimeout(() => {
        silent = true;
        ch.close();
        resolve({ done: true, value: undefined });
      }, headerMs);
    });
    let header: Buffer | undefined = Buffer.alloc(0);
    // The unterminated rest, as the pieces it came in: joined once when a line end (or MAX_PENDING) lets it go.
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    let size = -1;
    let shrunk = false;
    const reader = (ch as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
    try {
      for (;;) {
        const next = header ? await Promise.race([reader.next(), headerLate]) : await reader.next();
        if (next.done) break;
        const raw = next.value;
        if (options.stats) {
          options.stats.buffered = ch.readableLength;
          options.stats.maxBuffered = Math.max(options.stats.maxBuffered, ch.readableLength);
        }
        let chunk = raw;
        if (header) {
          // Only the new chunk is searched, and the header never grows past MAX_HEADER_BYTES.
          const nlInChunk = chunk.indexOf(0x0a);
          if (nlInChunk < 0 && header.length + chunk.length <= MAX_HEADER_BYTES) {
            header = Buffer.concat([header, chunk]);
            continue;
          }
          if (nlInChunk < 0 || header.length + nlInChunk >= MAX_HEADER_BYTES)
            throw new Error(`${session.resolved.alias}: ${what}: the host's answer did not start with the expected size line.`);
          const nl = header.length + nlInChunk;
          header = Buffer.concat([header, chunk]);
          clearTimeout(headerTimer);
          const m = HEADER.exec(header.subarray(0, nl + 1).toString('latin1'));
          size = m?.[1] ? Number(m[1]) : -1;
          chunk = header.subarray(nl + 1);
          header = undefined;
          if (size >= 0 && size < offset) {
            shrunk = true;
            break;
          }
        }
        // What is pending holds no line end, and no carriage return but maybe its last byte: only that byte and
        // the new chunk can hold a cut, so only they are searched (a runaway line costs linear time, not quadratic).
        const last = pending[pending.length - 1];
        const lastByte = last ? last.subarray(last.length - 1) : Buffer.alloc(0);
        const windowCut = deliverableBytes(lastByte.length > 0 ? Buffer.concat([lastByte, chunk]) : chunk, options.partialLines === true);
        const total = pendingBytes + chunk.length;
        let cut = windowCut > 0 ? pendingBytes - lastByte.length + windowCut : 0;
        if (total - cut > MAX_PENDING) cut = total;
        if (cut === 0) {
          pending.push(Buffer.from(chunk));
          pendingBytes += chunk.length;
          continue;
        }
        const inChunk = cut - pendingBytes;
        const data = Buffer.concat([...pending, chunk.subarray(0, inChunk)], cut);
        pending = inChunk < chunk.length ? [Buffer.from(chunk.subarray(inChunk))] : [];
        pendingBytes = total - cut;
        const start = offset;
        offset += data.length;
        yield { kind: 'data', offset: start, nextOffset: offset, data };
      }
    } finally {
      clearTimeout(headerTimer);
      options.signal?.removeEventListener('abort', onAbort);
      // As a for-await loop does on leaving early; not awaited, since a silent host may never end the stream.
      reader.return?.().catch(() => undefined);
    }
    if (options.signal?.aborted) return;
    if (silent) throw noAnswerError(session.resolved.alias, what, headerMs);
    if (shrunk) {
      yield { kind: 'truncated', offset, size };
      offset = 0;
      continue;
    }
    if (truncatedSeen) {
      yield { kind: 'truncated', offset: offset + pendingBytes, size: -1 };
      offset = 0;
      continue;
    }
    // A clean end: the channel reported tail's exit status (a dropped connection never delivers one).
    const status = await exit;
    if (typeof status?.code === 'number') {
      if (pendingBytes > 0) {
        const start = offset;
        offset += pendingBytes;
        yield { kind: 'data', offset: start, nextOffset: offset, data: Buffer.concat(pending, pendingBytes) };
      }
      return;
    }
    // The connection dropped mid-stream: the partial line is re-read from `offset` after reconnecting.
    yield { kind: 'dropped', offset };
  }
}
