// How many training examples a local data file holds, for the run-length estimate: JSONL and text one per
// line, CSV/TSV one per line after the header (a quoted field spanning lines makes this an over-count), a JSON
// file's top-level array (or its "data" array). Counted by reading the file in chunks, so a dataset of
// gigabytes costs no more memory than one chunk. Undefined when it cannot be known here (a Hub dataset,
// Parquet/Arrow, a file that does not exist): the estimate then says so rather than guessing.
import { closeSync, openSync, readSync, statSync } from 'node:fs';

const CHUNK = 1 << 20;
const JSON_LIMIT = 64 * 1024 * 1024;

function countLines(path: string): number {
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.allocUnsafe(CHUNK);
    let lines = 0;
    let last = 10;
    for (;;) {
      const n = readSync(fd, buf, 0, CHUNK, null);
      if (n <= 0) break;
      for (let i = 0; i < n; i++) if (buf[i] === 10) lines++;
      last = buf[n - 1]!;
    }
    // A last line without its newline is a line too.
    return last === 10 ? lines : lines + 1;
  } finally {
    closeSync(fd);
  }
}

/** Non-empty lines are what datasets reads from JSONL/text; empty trailing lines are not examples. */
function countNonEmptyLines(path: string): number {
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.allocUnsafe(CHUNK);
    let lines = 0;
    let content = false;
    for (;;) {
      const n = readSync(fd, buf, 0, CHUNK, null);
      if (n <= 0) break;
      for (let i = 0; i < n; i++) {
        const c = buf[i]!;
        if (c === 10) {
          if (content) lines++;
          content = false;
        } else if (c !== 13 && c !== 32 && c !== 9) content = true;
      }
    }
    return content ? lines + 1 : lines;
  } finally {
    closeSync(fd);
  }
}

export function countExamples(absPath: string): number | undefined {
  let size: number;
  try {
    const st = statSync(absPath);
    if (!st.isFile()) return undefined;
    size = st.size;
  } catch {
    return undefined;
  }
  const ext =
    absPath
      .toLowerCase()
      .replace(/\.(gz|zst)$/, '')
      .split('.')
      .pop() ?? '';
  if (/\.(gz|zst)$/i.test(absPath)) return undefined;
  if (ext === 'jsonl' || ext === 'txt') return countNonEmptyLines(absPath);
  if (ext === 'csv' || ext === 'tsv') return Math.max(0, countLines(absPath) - 1);
  if (ext === 'json' && size <= JSON_LIMIT) {
    try {
      const fd = openSync(absPath, 'r');
      const buf = Buffer.alloc(size);
      try {
        readSync(fd, buf, 0, size, 0);
      } finally {
        closeSync(fd);
      }
      const v = JSON.parse(buf.toString('utf8')) as unknown;
      if (Array.isArray(v)) return v.length;
      const data = (v as { data?: unknown }).data;
      return Array.isArray(data) ? data.length : undefined;
    } catch {
      return undefined;
    }
  }
  return undefined;
}
