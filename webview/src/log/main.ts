// Log panel: xterm.js renders ANSI colours and tqdm's carriage returns exactly as a terminal would; the
// panel adds following, search, a level filter, failure signatures and flow control on top.
import { Terminal } from '@xterm/xterm';
import type { IMarker } from '@xterm/xterm';
import { SearchAddon } from '@xterm/addon-search';
import '@xterm/xterm/css/xterm.css';
import type { LogFromWebview, LogInitMessage, LogLevelFilter, LogSignature, LogStatusMessage, LogToWebview, LogViewState } from '../../../src/protocol/log';
import { createBridge } from '../shared/vscodeApi';
import { custom, el, renderEmpty } from '../shared/dom';
import { registerToolkit, setValue, valueOf } from '../shared/toolkit';
import { compileSignatures, fixLine, levelOf, LineRing, passes, render, stripAnsi } from './lines';
import type { CompiledSignature, LogLine } from './lines';
import { traceLinks } from './traceLinks';

/** Longest line kept and drawn; a longer one is cut (the full log on disk keeps it whole). */
const MAX_LINE = 16 * 1024;
/** How long an unterminated line waits for its newline before it is drawn anyway. */
const PARTIAL_FLUSH_MS = 200;
const MAX_FAILURES_LISTED = 50;

registerToolkit();
const bridge = createBridge<LogToWebview, LogFromWebview, LogViewState>();
const saved = bridge.state();
let view: LogViewState = { follow: saved?.follow ?? true, filter: saved?.filter ?? 'all', search: saved?.search ?? '', timestamps: saved?.timestamps === true };
const root = document.getElementById('root') ?? document.body;

interface Hit {
  readonly line: LogLine;
  marker?: IMarker;
}

class LogView {
  private readonly term: Terminal;
  private readonly search = new SearchAddon();
  private readonly ring: LineRing;
  private readonly sigs: CompiledSignature[];
  private partial = '';
  private partialWritten = 0;
  private partialTimer: ReturnType<typeof setTimeout> | undefined;
  private skipping = false;
  private lineNo = 0;
  private pausedLines = 0;
  private firstError: Hit | undefined;
  private readonly failures: Hit[] = [];
  private readonly statusEl: HTMLElement;
  private readonly failuresEl: HTMLElement;
  private readonly followBtn: HTMLElement;
  private readonly timesBtn: HTMLElement;
  private readonly finalEl: HTMLElement;
  private liveText = '';
  /** When the person last scrolled with the wheel, keys or the scrollbar: only their scrolling pauses or resumes. */
  private userScrollAt = 0;
  /** Following stopped because they scrolled up (not the Pause button): reaching the end again resumes it. */
  private autoPaused = false;

  constructor(readonly init: LogInitMessage) {
    this.ring = new LineRing(init.scrollback);
    this.sigs = compileSignatures(init.signatures);
    this.term = new Terminal({
      scrollback: init.scrollback,
      convertEol: true,
      disableStdin: true,
      cursorBlink: false,
      cursorStyle: 'bar',
      fontFamily: getComputedStyle(document.body).getPropertyValue('--vscode-editor-font-family').trim() || 'monospace',
      fontSize: 12,
      theme: themeFromCss(),
      // OSC 8 hyperlinks come from the remote process: never follow them from the panel.
      linkHandler: { activate: () => undefined, allowNonHttpProtocols: false },
    });
    this.term.loadAddon(this.search);
    this.linkTracebacks(init.workspaceFolder);

    const searchField = custom('vscode-text-field', { id: 'search', placeholder: 'Search', 'aria-label': 'Search the log' });
    setValue(searchField, view.search);
    this.followBtn = custom('vscode-button', { id: 'follow', appearance: 'secondary' });
    const level = custom(
      'vscode-dropdown',
      { id: 'level', 'aria-label': 'Show levels' },
      custom('vscode-option', { value: 'all' }, 'All levels'),
      custom('vscode-option', { value: 'warning' }, 'Warnings and errors'),
      custom('vscode-option', { value: 'error' }, 'Errors only'),
    );
    const prev = custom('vscode-button', { id: 'prev', appearance: 'icon', 'aria-label': 'Previous match', title: 'Previous match (Shift+Enter)' }, '↑');
    const next = custom('vscode-button', { id: 'next', appearance: 'icon', 'aria-label': 'Next match', title: 'Next match (Enter)' }, '↓');
    const firstErr = custom('vscode-button', { id: 'firstError', appearance: 'secondary', title: 'Jump to the first error (F8)' }, 'First error');
    this.timesBtn = custom('vscode-button', { id: 'timestamps', appearance: 'secondary', title: 'Show the time each line reached this panel' }, 'Timestamps');
    const copy = custom('vscode-button', { id: 'copy', appearance: 'secondary', title: 'Copy the selection, or the lines shown' }, 'Copy');
    const full = custom('vscode-button', { id: 'openFull', appearance: 'secondary', title: 'Open the whole log from disk in an editor' }, 'Open full log');
    const toolbar = el(
      'div',
      { class: 'toolbar', role: 'toolbar', 'aria-label': 'Log controls' },
      this.followBtn,
      searchField,
      prev,
      next,
      level,
      firstErr,
      this.timesBtn,
      copy,
      full,
    );
    this.statusEl = el('div', { id: 'status', class: 'status', role: 'status', 'aria-live': 'polite' });
    this.failuresEl = el('div', { id: 'failures', class: 'failures', 'aria-label': 'Recognised failures' });
    const termEl = el('div', { id: 'terminal', class: 'terminal', 'aria-label': 'Run log' });
    this.finalEl = el('div', { id: 'finalStatus', class: 'final-status', role: 'status', hidden: '' });
    root.replaceChildren(el('div', { class: 'log-app' }, toolbar, this.finalEl, this.statusEl, this.failuresEl, termEl));
    this.term.open(termEl);
    this.fit(termEl);
    // Reading back pauses, as in a terminal: new lines stop pushing the view down while you scroll up, and
    // following resumes when you scroll back to the end. Scrolls the panel makes itself (new lines, redraws,
    // jumps to a match) come with no input and change nothing.
    const touched = (): void => {
      this.userScrollAt = Date.now();
    };
    termEl.addEventListener('wheel', touched, { capture: true, passive: true });
    termEl.addEventListener('mousedown', touched, { capture: true });
    termEl.addEventListener(
      'keydown',
      (e) => {
        if (['PageUp', 'PageDown', 'ArrowUp', 'ArrowDown', 'Home', 'End'].includes(e.key)) touched();
      },
      { capture: true },
    );
    this.term.onScroll(() => this.scrolledByUser());
    new ResizeObserver(() => this.fit(termEl)).observe(termEl);

    // The toolkit dropdown only takes a value once its options exist in the DOM.
    requestAnimationFrame(() => setValue(level, view.filter));
    level.addEventListener('change', () => {
      const v = valueOf(level);
      if (v === 'all' || v === 'warning' || v === 'error') this.setFilter(v);
    });
    this.followBtn.addEventListener('click', () => this.setFollow(!view.follow));
    this.timesBtn.addEventListener('click', () => this.setTimestamps(!view.timestamps));
    const find = (back: boolean): void => {
      const q = valueOf(searchField);
      view = { ...view, search: q };
      bridge.saveState(view);
      if (!q) return;
      const found = back ? this.search.findPrevious(q) : this.search.findNext(q);
      this.setStatus(found ? '' : `No match for "${q}" in the lines shown`);
    };
    searchField.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') {
        e.preventDefault();
        find(e.shiftKey);
      }
      if (e.key === 'Escape') {
        this.search.clearDecorations();
        this.term.focus();
      }
    });
    prev.addEventListener('click', () => find(true));
    next.addEventListener('click', () => find(false));
    firstErr.addEventListener('click', () => this.jumpToFirstError());
    copy.addEventListener('click', () => this.copy());
    full.addEventListener('click', () => bridge.post({ type: 'openFullLog' }));
    window.addEventListener('keydown', (e) => {
      if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === 'f') {
        e.preventDefault();
        (searchField as HTMLElement).focus();
      }
      if (e.key === 'F8') {
        e.preventDefault();
        this.jumpToFirstError();
      }
    });
    this.renderFollow();
    this.renderTimes();
    if (init.truncated) this.setStatus('Older lines are only in the full log on disk ("Open full log").');
  }

  private fit(termEl: HTMLElement): void {
    // Without the fit addon: read the cell size from xterm's render service, the same figures addon-fit reads.
    const dims = (this.term as unknown as { _core?: { _renderService?: { dimensions?: { css?: { cell?: { width: number; height: number } } } } } })._core
      ?._renderService?.dimensions?.css?.cell;
    if (!dims || dims.width <= 0 || dims.height <= 0) return;
    const cols = Math.max(20, Math.floor((termEl.clientWidth - 14) / dims.width));
    const rows = Math.max(5, Math.floor(termEl.clientHeight / dims.height));
    if (cols !== this.term.cols || rows !== this.term.rows) this.term.resize(cols, rows);
  }

  setStatus(text: string): void {
    this.statusEl.textContent = [text, this.liveText].filter(Boolean).join(' · ');
  }

  setLive(text: string): void {
    this.liveText = text;
    this.setStatus('');
  }

  /** Feeds one chunk; `done` runs once xterm has parsed everything it produced (the flow-control ack). */
  ingest(data: string, done: () => void): void {
    if (this.partialTimer) clearTimeout(this.partialTimer);
    if (this.skipping) {
      // The rest of a line already cut at MAX_LINE: drop it up to its newline.
      const nl = data.indexOf('\n');
      if (nl < 0) {
        done();
        return;
      }
      this.skipping = false;
      data = data.slice(nl + 1);
    }
    const text = this.partial + data;
    const parts = text.split('\n');
    this.partial = parts.pop() ?? '';
    const segments: Array<{ text: string; mark?: Hit }> = [];
    let out = '';
    for (let i = 0; i < parts.length; i++) {
      let raw = parts[i] ?? '';
      if (raw.endsWith('\r')) raw = raw.slice(0, -1);
      const already = i === 0 ? this.partialWritten : 0;
      if (raw.length > MAX_LINE) raw = `${raw.slice(0, MAX_LINE)}\x1b[0m … [line cut here; the rest is in the full log]`;
      const line = this.classify(raw);
      if (view.follow && passes(line.level, view.filter)) {
        const shown = render(line, view.timestamps === true);
        if (already > 0) out += shown === line.text ? line.text.slice(already) : `\r\x1b[2K${shown}`;
        else out += shown;
        out += '\n';
        const hit = this.noteHit(line);
        // The marker goes on the line itself, so the fix below it is written after the marked segment.
        if (hit) {
          segments.push({ text: out, mark: hit });
          out = '';
        }
        if (line.signature) out += fixLine(line.signature);
      } else {
        this.noteHit(line);
        if (!view.follow) this.pausedLines++;
      }
      if (i === 0) this.partialWritten = 0;
    }
    if (this.partial.length > MAX_LINE && !this.partial.includes('\r')) {
      // A line longer than MAX_LINE (or a stream with no newline at all) would grow this forever:
      // keep its start, note the cut, and skip the rest of it up to its newline.
      const line = this.classify(`${this.partial.slice(0, MAX_LINE)}\x1b[0m … [line cut here; the rest is in the full log]`);
      if (view.follow && passes(line.level, view.filter)) {
        out += (this.partialWritten > 0 ? `\r\x1b[2K` : '') + render(line, view.timestamps === true) + '\n';
      }
      this.partial = '';
      this.partialWritten = 0;
      this.skipping = true;
    }
    out += this.drawPartial(this.partial.includes('\r'));
    if (out) segments.push({ text: out });
    if (!view.follow) this.setStatus(`Paused: ${this.pausedLines.toLocaleString()} new lines not shown`);
    this.writeSegments(segments, done);
    if (this.partial && this.partialWritten < this.partial.length) {
      this.partialTimer = setTimeout(() => {
        const rest = this.drawPartial(true);
        if (rest) this.term.write(rest);
      }, PARTIAL_FLUSH_MS);
    }
  }

  /** The not yet terminated line: progress bars (\r) are drawn as they come, other text waits a moment. */
  private drawPartial(now: boolean): string {
    if (!now || !view.follow || view.filter !== 'all' || this.partialWritten >= this.partial.length) return '';
    const rest = this.partial.slice(this.partialWritten);
    // tqdm rewrites one line with \r forever: keep only the last state, it is all a terminal would show.
    const k = this.partial.lastIndexOf('\r');
    this.partial = k > 0 ? this.partial.slice(k) : this.partial;
    this.partialWritten = this.partial.length;
    return rest;
  }

  private writeSegments(segments: ReadonlyArray<{ text: string; mark?: Hit }>, done: () => void): void {
    if (segments.length === 0) {
      done();
      return;
    }
    segments.forEach((s, i) => {
      const last = i === segments.length - 1;
      this.term.write(s.text, () => {
        if (s.mark) {
          // The cursor sits on the row after the line just parsed.
          s.mark.marker = this.term.registerMarker(-1);
          this.renderFailures();
        }
        if (last) {
          if (view.follow) this.term.scrollToBottom();
          done();
        }
      });
    });
  }

  private classify(raw: string): LogLine {
    const n = ++this.lineNo;
    const plain = stripAnsi(raw);
    const level = levelOf(plain);
    let signature: LogSignature | undefined;
    // Signatures are only tried on lines that already look like trouble: 1M info lines stay cheap.
    if (level !== 'info' || /NCCL|CUDA|nccl|cuda|Killed|OOM/.test(plain)) {
      for (const s of this.sigs)
        if (s.re.test(plain)) {
          signature = s.sig;
          break;
        }
    }
    const at = Date.now();
    const line: LogLine = signature ? { n, text: raw, level: 'error', signature, at } : { n, text: raw, level, at };
    this.ring.push(line);
    return line;
  }

  /** Records the first error and each failure signature; returns the hit when it needs a marker. */
  private noteHit(line: LogLine): Hit | undefined {
    let hit: Hit | undefined;
    if (line.level === 'error' && !this.firstError) {
      hit = { line };
      this.firstError = hit;
    }
    if (line.signature && this.failures.length < MAX_FAILURES_LISTED) {
      hit = hit ?? { line };
      this.failures.push(hit);
      this.renderFailures();
    }
    return hit;
  }

  private renderFailures(): void {
    this.failuresEl.replaceChildren();
    for (const f of this.failures) {
      const sig = f.line.signature;
      if (!sig) continue;
      const show = custom('vscode-button', { appearance: 'secondary' }, `Line ${f.line.n}`);
      show.addEventListener('click', () => this.reveal(f));
      this.failuresEl.append(el('div', { class: 'failure', role: 'alert' }, el('strong', {}, sig.title), el('span', { class: 'hint' }, sig.hint), show));
    }
  }

  private reveal(hit: Hit): void {
    if (hit.marker && !hit.marker.isDisposed && hit.marker.line >= 0) {
      this.setFollow(false, false);
      this.term.scrollToLine(hit.marker.line);
      this.term.selectLines(hit.marker.line, hit.marker.line);
      this.setStatus(`Line ${hit.line.n}`);
    } else {
      // Scrolled out of the bounded scrollback: the full log on disk still has it.
      bridge.post({ type: 'openFullLog', line: hit.line.n });
    }
  }

  jumpToFirstError(): void {
    if (!this.firstError) {
      this.setStatus('No error in the log so far');
      return;
    }
    this.reveal(this.firstError);
  }

  private copy(): void {
    let text = this.term.getSelection();
    if (!text) {
      const lines: string[] = [];
      for (const l of this.ring.lines()) if (passes(l.level, view.filter)) lines.push(stripAnsi(l.text));
      text = lines.join('\n');
    }
    bridge.post({ type: 'copy', text });
    this.setStatus(`Copied ${text.length.toLocaleString()} characters`);
  }

  setFilter(filter: LogLevelFilter): void {
    view = { ...view, filter };
    bridge.saveState(view);
    this.redraw();
  }

  /** Traceback frames in the workspace open the local file at their line (the extension checks the path). */
  private linkTracebacks(workspaceFolder: string | undefined): void {
    if (!workspaceFolder) return;
    this.term.registerLinkProvider({
      provideLinks: (y, callback) => {
        const b = this.term.buffer.active;
        const cols = this.term.cols;
        // The logical line the row belongs to: a long frame wraps over several rows.
        let first = y - 1;
        while (first > 0 && b.getLine(first)?.isWrapped) first--;
        let text = '';
        let last = first;
        for (let r = first; ; r++) {
          const row = b.getLine(r);
          if (!row || (r > first && !row.isWrapped)) break;
          text += row.translateToString(false).padEnd(cols).slice(0, cols);
          last = r;
        }
        const at = (i: number): { x: number; y: number } => ({ x: (i % cols) + 1, y: first + Math.floor(i / cols) + 1 });
        const links = traceLinks(text.trimEnd(), workspaceFolder)
          .map((l) => ({
            range: { start: at(l.start), end: at(l.end - 1) },
            text: text.slice(l.start, l.end),
            decorations: { underline: true, pointerCursor: true },
            activate: (): void => bridge.post({ type: 'openSource', path: l.path, line: l.line }),
          }))
          .filter((l) => l.range.start.y <= y && l.range.end.y >= y && l.range.end.y <= last + 1);
        callback(links.length ? links : undefined);
      },
    });
  }

  private scrolledByUser(): void {
    if (Date.now() - this.userScrollAt > 1000) return;
    const b = this.term.buffer.active;
    const atEnd = b.viewportY >= b.baseY;
    if (view.follow && !atEnd) {
      this.setFollow(false, false);
      this.autoPaused = true;
      this.setStatus('Paused while you read back: scroll to the end, or press Follow');
    } else if (!view.follow && this.autoPaused && atEnd) {
      this.setFollow(true);
    }
  }

  setFollow(follow: boolean, redraw = true): void {
    this.autoPaused = false;
    const was = view.follow;
    view = { ...view, follow };
    bridge.saveState(view);
    this.renderFollow();
    if (follow && !was && redraw) this.redraw();
    if (follow) this.term.scrollToBottom();
  }

  setTimestamps(on: boolean): void {
    view = { ...view, timestamps: on };
    bridge.saveState(view);
    this.renderTimes();
    this.redraw();
  }

  private renderTimes(): void {
    this.timesBtn.setAttribute('aria-pressed', String(view.timestamps === true));
    this.timesBtn.textContent = view.timestamps ? 'Hide timestamps' : 'Timestamps';
  }

  /** How the run ended, above the log: green when it completed, red when it failed, neutral otherwise. */
  setFinal(msg: LogStatusMessage): void {
    if (msg.state !== 'ended') {
      this.finalEl.hidden = true;
      return;
    }
    const tone = msg.outcome === 'completed' ? 'ok' : msg.outcome === 'failed' ? 'bad' : 'neutral';
    this.finalEl.className = `final-status ${tone}`;
    this.finalEl.setAttribute('data-outcome', msg.outcome ?? 'unknown');
    this.finalEl.replaceChildren(el('span', { class: 'icon', 'aria-hidden': 'true' }, tone === 'ok' ? '✔' : tone === 'bad' ? '✖' : '■'), msg.text);
    this.finalEl.hidden = false;
  }

  private renderFollow(): void {
    this.followBtn.textContent = view.follow ? 'Pause' : 'Follow';
    this.followBtn.setAttribute('aria-pressed', String(!view.follow));
    this.followBtn.setAttribute('title', view.follow ? 'Stop following new lines' : 'Follow new lines again');
  }

  /** Redraws from the ring (bounded by the scrollback), e.g. after the filter changed or following resumed. */
  private redraw(): void {
    this.term.reset();
    this.pausedLines = 0;
    if (this.firstError) this.firstError.marker = undefined;
    for (const f of this.failures) f.marker = undefined;
    const segments: Array<{ text: string; mark?: Hit }> = [];
    let out = '';
    for (const l of this.ring.lines()) {
      if (!passes(l.level, view.filter)) continue;
      out += render(l, view.timestamps === true) + '\n';
      const hit = this.firstError?.line === l ? this.firstError : this.failures.find((f) => f.line === l);
      if (hit) {
        segments.push({ text: out, mark: hit });
        out = '';
      }
      if (l.signature) out += fixLine(l.signature);
    }
    this.partialWritten = 0;
    out += this.drawPartial(true);
    if (out) segments.push({ text: out });
    this.writeSegments(segments, () => undefined);
    this.setStatus(
      view.filter === 'all'
        ? ''
        : `Showing ${view.filter === 'error' ? 'errors' : 'warnings and errors'} among the last ${this.ring.size.toLocaleString()} lines`,
    );
  }
}

function themeFromCss(): Record<string, string> {
  const s = getComputedStyle(document.body);
  const v = (name: string): string | undefined => s.getPropertyValue(name).trim() || undefined;
  const theme: Record<string, string | undefined> = {
    background: v('--vscode-terminal-background') ?? v('--vscode-panel-background') ?? v('--vscode-editor-background'),
    foreground: v('--vscode-terminal-foreground') ?? v('--vscode-foreground'),
    selectionBackground: v('--vscode-terminal-selectionBackground') ?? v('--vscode-editor-selectionBackground'),
    black: v('--vscode-terminal-ansiBlack'),
    red: v('--vscode-terminal-ansiRed'),
    green: v('--vscode-terminal-ansiGreen'),
    yellow: v('--vscode-terminal-ansiYellow'),
    blue: v('--vscode-terminal-ansiBlue'),
    magenta: v('--vscode-terminal-ansiMagenta'),
    cyan: v('--vscode-terminal-ansiCyan'),
    white: v('--vscode-terminal-ansiWhite'),
  };
  return Object.fromEntries(Object.entries(theme).filter((e): e is [string, string] => e[1] !== undefined));
}

let logView: LogView | undefined;
let startOffset = 0;
let expectedOffset = 0;

bridge.start((msg) => {
  switch (msg.type) {
    case 'empty':
      logView = undefined;
      renderEmpty(root, msg.message, msg.actions, (id) => {
        if (id === 'openLocalFile' || id === 'startRun') bridge.post({ type: 'action', id });
      });
      return;
    case 'init':
      logView = new LogView(msg);
      startOffset = msg.startOffset;
      expectedOffset = msg.startOffset;
      document.title = msg.title;
      return;
    case 'chunk': {
      const seq = msg.seq;
      const ack = (): void => bridge.post({ type: 'ack', seq });
      if (!logView || msg.offset !== expectedOffset) {
        // A chunk for an older session (before a re-init) is acknowledged but not shown twice.
        ack();
        return;
      }
      expectedOffset = msg.offset + msg.bytes;
      logView.ingest(msg.data, ack);
      return;
    }
    case 'status':
      // The final status has its own styled line; repeating it in the live status would say it twice.
      logView?.setLive(msg.state === 'ended' && msg.outcome ? '' : msg.text);
      logView?.setFinal(msg);
      return;
  }
});

// Exposed for the panel tests and the benchmark: bytes the view has taken in.
(window as unknown as { __logPanel: { offset: () => number } }).__logPanel = { offset: () => expectedOffset - startOffset };
