// Line assembly for a host's output. Each chunk is scanned once, from its own start, and an unterminated line is
// kept as a list of chunks joined once when its newline comes: time stays linear in the bytes received, however
// the host cuts them (a megabyte with no newline, sent a few bytes at a time, would otherwise be re-copied and
// re-scanned on every chunk). A line longer than the cap is dropped whole, counted but never kept.

export class LineSplitter {
  private parts: Buffer[] = [];
  private partBytes = 0;
  private overlong = false;
  /** Lines dropped for being longer than maxLineBytes. */
  dropped = 0;

  constructor(private readonly maxLineBytes: number) {}

  /** The complete lines `chunk` ends (without their newline, decoded as UTF-8). */
  push(chunk: Buffer): string[] {
    const lines: string[] = [];
    let start = 0;
    for (let nl = chunk.indexOf(0x0a); nl >= 0; nl = chunk.indexOf(0x0a, start)) {
      this.add(chunk.subarray(start, nl));
      const line = this.take();
      if (line !== undefined) lines.push(line);
      start = nl + 1;
    }
    this.add(chunk.subarray(start));
    return lines;
  }

  /** What is left once the stream ended: a last line without its newline, if any. */
  end(): string | undefined {
    return this.partBytes === 0 && !this.overlong ? undefined : this.take();
  }

  private add(b: Buffer): void {
    if (b.length === 0 || this.overlong) return;
    if (this.partBytes + b.length > this.maxLineBytes) {
      this.overlong = true;
      this.parts = [];
      this.partBytes = 0;
      return;
    }
    // A copy: a short piece must not keep the host's whole chunk alive.
    this.parts.push(Buffer.from(b));
    this.partBytes += b.length;
  }

  private take(): string | undefined {
    if (this.overlong) {
      this.overlong = false;
      this.dropped++;
      return undefined;
    }
    const text = this.parts.length === 1 ? this.parts[0]!.toString('utf8') : Buffer.concat(this.parts, this.partBytes).toString('utf8');
    this.parts = [];
    this.partBytes = 0;
    return text;
  }
}
