// Turning bytes into checkable text, and offsets into line/column. Validation never throws, so
// anything that is not text we can check becomes a diagnostic here.

/** Above this size a document gets one diagnostic instead of a parse: keeps every check under 100 ms. */
export const MAX_CHECKED_BYTES = 1024 * 1024;

/**
 * The full YAML library parses about 1 MB/s on these machines; above this size a document it would
 * have to handle (the fast path declined it) is not parsed in the editor, so typing never stalls.
 * The CLI lifts the limit: in CI a full answer matters more than 100 ms.
 */
export const EDITOR_LIBRARY_PARSE_LIMIT = 96 * 1024;

export type DecodeResult = { readonly ok: true; readonly text: string } | { readonly ok: false; readonly reason: 'binary' | 'utf8'; readonly offset: number };

const decoder = new TextDecoder('utf-8', { fatal: true });

/** Strict UTF-8 decoding; a NUL byte in the first 8 KiB marks a binary file, as git does. */
export function decodeText(bytes: Uint8Array): DecodeResult {
  const probe = Math.min(bytes.length, 8192);
  for (let i = 0; i < probe; i++) if (bytes[i] === 0) return { ok: false, reason: 'binary', offset: i };
  try {
    return { ok: true, text: decoder.decode(bytes) };
  } catch {
    return { ok: false, reason: 'utf8', offset: firstInvalidUtf8(bytes) };
  }
}

function firstInvalidUtf8(b: Uint8Array): number {
  let i = 0;
  while (i < b.length) {
    const c = b[i]!;
    const n = c < 0x80 ? 0 : c >= 0xc2 && c <= 0xdf ? 1 : c >= 0xe0 && c <= 0xef ? 2 : c >= 0xf0 && c <= 0xf4 ? 3 : -1;
    if (n < 0) return i;
    for (let k = 1; k <= n; k++) if (i + k >= b.length || (b[i + k]! & 0xc0) !== 0x80) return i;
    i += n + 1;
  }
  return 0;
}

export interface LineCol {
  /** 0-based. */
  readonly line: number;
  /** 0-based, UTF-16 units. */
  readonly character: number;
}

/** Offsets to positions by binary search over line starts; built once per text. */
export class LineIndex {
  private readonly starts: number[] = [0];
  constructor(text: string) {
    for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) this.starts.push(i + 1);
  }
  positionAt(offset: number): LineCol {
    let lo = 0;
    let hi = this.starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.starts[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo, character: offset - this.starts[lo]! };
  }
  offsetAt(line: number, character: number): number {
    const s = this.starts[Math.max(0, Math.min(line, this.starts.length - 1))]!;
    return s + character;
  }
  get lineCount(): number {
    return this.starts.length;
  }
}
