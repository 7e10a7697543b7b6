// Splits the log stream into lines for the level filter, the bounded ring the view is redrawn from and
// signature matching. The terminal itself gets the text unchanged apart from highlighting.
import type { LogLevel, LogLevelFilter, LogSignature } from '../../../src/protocol/log';

// eslint-disable-next-line no-control-regex
const ANSI = /\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)/g;

export function stripAnsi(s: string): string {
  // Most lines carry no escape at all: skip the regex for them (this runs once per line at 5 MB/s).
  return s.includes('\x1b') ? s.replace(ANSI, '') : s;
}

/** What a person would call the line's level; Python tracebacks and CUDA errors count as errors. */
export function levelOf(plain: string): LogLevel {
  if (/\b(ERROR|CRITICAL|FATAL)\b|Traceback \(most recent call last\)|^\w*(Error|Exception)\b|out of memory|RuntimeError|Killed\b/.test(plain)) {
    return 'error';
  }
  if (/\bWARN(ING)?\b|\bwarn\(|UserWarning|FutureWarning|DeprecationWarning/.test(plain)) return 'warning';
  return 'info';
}

export function passes(level: LogLevel, filter: LogLevelFilter): boolean {
  if (filter === 'all') return true;
  if (filter === 'warning') return level !== 'info';
  return level === 'error';
}

export interface CompiledSignature {
  readonly sig: LogSignature;
  readonly re: RegExp;
}

export function compileSignatures(sigs: readonly LogSignature[]): CompiledSignature[] {
  const out: CompiledSignature[] = [];
  for (const sig of sigs) {
    try {
      out.push({ sig, re: new RegExp(sig.pattern, 'i') });
    } catch {
      // A pattern JavaScript cannot compile (Python-only syntax) is skipped rather than breaking the panel.
    }
  }
  return out;
}

export interface LogLine {
  /** 1-based number of the line in the whole log (counting from the panel's start offset). */
  readonly n: number;
  readonly text: string;
  readonly level: LogLevel;
  readonly signature?: LogSignature;
  /** When the line reached the panel (ms since the epoch), for the timestamps toggle. */
  readonly at: number;
}

/** Fixed-capacity ring of the most recent lines: what the panel redraws from when the filter changes. */
export class LineRing {
  private readonly buf: Array<LogLine | undefined>;
  private start = 0;
  private count = 0;

  constructor(readonly capacity: number) {
    this.buf = new Array<LogLine | undefined>(capacity);
  }

  push(line: LogLine): void {
    const i = (this.start + this.count) % this.capacity;
    this.buf[i] = line;
    if (this.count < this.capacity) this.count++;
    else this.start = (this.start + 1) % this.capacity;
  }

  get size(): number {
    return this.count;
  }

  *lines(): IterableIterator<LogLine> {
    for (let k = 0; k < this.count; k++) {
      const l = this.buf[(this.start + k) % this.capacity];
      if (l) yield l;
    }
  }

  clear(): void {
    this.start = 0;
    this.count = 0;
    this.buf.fill(undefined);
  }
}

/** Highlight for a line that matched a known failure: bold white on red, then reset. */
export function highlight(text: string): string {
  return `\x1b[1;97;41m${stripAnsi(text)}\x1b[0m`;
}

/**
 * The line as the terminal draws it: a recognised failure on red with its fix on the row below (italic
 * cyan), errors red and warnings yellow. A line that brings its own colours keeps them: the program chose.
 */
export function render(line: LogLine, timestamps: boolean): string {
  const stamp = timestamps ? `\x1b[2m${clock(line.at)}\x1b[22m ` : '';
  if (line.signature) return `${stamp}${highlight(line.text)}`;
  if (line.level === 'info' || line.text.includes('\x1b')) return stamp + line.text;
  return `${stamp}\x1b[${line.level === 'error' ? 31 : 33}m${line.text}\x1b[39m`;
}

/** The fix of a recognised failure, written after its line; not a line of the log (copy leaves it out). */
export function fixLine(sig: LogSignature): string {
  return `\x1b[3;36m  ↳ Fix: ${sig.hint}\x1b[0m\n`;
}

function clock(ms: number): string {
  const d = new Date(ms);
  const two = (n: number): string => String(n).padStart(2, '0');
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}
