// Publishes the core checks as VS Code diagnostics: on open at once, on typing after a short pause
// (debounced per document), and for every open config again when any of them is saved (a run spec
// depends on the accelerate config and .env beside it).
import * as vscode from 'vscode';
import type { ConfigDiagnostic } from '../../core/config/types';
import { syntaxOf } from '../../core/config/kinds';
import { validateText } from '../../core/config/validate';
import { LineIndex } from '../../core/config/text';
import type { LineCol } from '../../core/config/text';
import type { ValidateResult } from '../../core/config/validate';
import { editorFiles } from './configFiles';
import type { BackgroundValidator } from '../../core/config/backgroundValidator';
import { CheckGuard } from '../../core/config/checkGuard';
import { checkRoots } from './configFiles';

export const DIAGNOSTIC_SOURCE = 'Remote Fine-Tune';
export const DEBOUNCE_MS = 300;

interface Entry {
  readonly version: number;
  readonly result: ValidateResult;
}

const SEVERITY: Record<ConfigDiagnostic['severity'], vscode.DiagnosticSeverity> = {
  error: vscode.DiagnosticSeverity.Error,
  warning: vscode.DiagnosticSeverity.Warning,
  info: vscode.DiagnosticSeverity.Information,
};

export function isConfigCandidate(doc: vscode.TextDocument): boolean {
  return (doc.uri.scheme === 'file' || doc.uri.scheme === 'untitled') && syntaxOf(doc.fileName) !== 'other';
}

export class ConfigDiagnostics implements vscode.Disposable {
  private readonly collection = vscode.languages.createDiagnosticCollection('remoteFinetune.config');
  private readonly results = new Map<string, Entry>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidValidate = this.changed.event;
  private readonly subs: vscode.Disposable[] = [];
  private readonly guard: CheckGuard;

  /**
   * `background` runs the full check of big documents the editor's thread must not parse (see backgroundValidator.ts);
   * `guardFile` is where a check in progress is marked, so one that killed the extension host is not run again on restart.
   */
  constructor(
    private readonly log: vscode.LogOutputChannel,
    private readonly background?: BackgroundValidator,
    guardFile?: string,
  ) {
    this.guard = new CheckGuard(guardFile);
    this.subs.push(
      this.collection,
      this.changed,
      vscode.workspace.onDidOpenTextDocument((d) => this.validate(d)),
      vscode.workspace.onDidChangeTextDocument((e) => this.schedule(e.document)),
      vscode.workspace.onDidSaveTextDocument((d) => {
        this.guard.clear(d.uri.toString());
        this.validateAllOpen();
      }),
      vscode.workspace.onDidCloseTextDocument((d) => this.forget(d.uri)),
    );
    this.validateAllOpen();
  }

  validateAllOpen(): void {
    for (const d of vscode.workspace.textDocuments) this.validate(d);
  }

  private schedule(doc: vscode.TextDocument): void {
    if (!isConfigCandidate(doc)) return;
    const key = doc.uri.toString();
    const t = this.timers.get(key);
    if (t) clearTimeout(t);
    this.timers.set(
      key,
      setTimeout(() => {
        this.timers.delete(key);
        this.validate(doc);
      }, DEBOUNCE_MS),
    );
  }

  /** Validates now; returns the core result (also kept for quick fixes and CodeLens). */
  validate(doc: vscode.TextDocument): ValidateResult | undefined {
    if (!isConfigCandidate(doc) || doc.isClosed) return undefined;
    const key = doc.uri.toString();
    const cached = this.results.get(key);
    if (cached && cached.version === doc.version) return cached.result;
    const t0 = performance.now();
    const text = doc.getText();
    const result = this.guard.isSuspect(key)
      ? stoppedLastTime(text)
      : this.guard.run(key, () => validateText(text, { fileName: doc.fileName, files: editorFiles(doc.fileName) }));
    this.results.set(key, { version: doc.version, result });
    if (result.deferred && this.background) {
      // Until the worker answers, the last full answer stays on screen (no flash of "too large" while typing).
      this.checkInBackground(doc, text);
      return result;
    }
    this.collection.set(
      doc.uri,
      result.diagnostics.map((d) => toVs(doc, d)),
    );
    const ms = performance.now() - t0;
    if (result.kind)
      this.log.debug(`config: ${vscode.workspace.asRelativePath(doc.uri)} (${result.kind}) → ${result.diagnostics.length} diagnostics in ${ms.toFixed(1)} ms`);
    this.changed.fire(doc.uri);
    return result;
  }

  private checkInBackground(doc: vscode.TextDocument, text: string): void {
    const key = doc.uri.toString();
    const version = doc.version;
    const t0 = performance.now();
    this.background!.check(key, text, doc.fileName, checkRoots(doc.fileName)).then(
      (full) => {
        if (!full || doc.isClosed || doc.version !== version) return; // superseded: a newer check follows
        this.results.set(key, { version, result: full });
        this.collection.set(
          doc.uri,
          full.diagnostics.map((d) => toVs(doc, d)),
        );
        this.log.debug(
          `config: ${vscode.workspace.asRelativePath(doc.uri)} (${full.kind}) → ${full.diagnostics.length} diagnostics in ${(performance.now() - t0).toFixed(0)} ms in the background`,
        );
        this.changed.fire(doc.uri);
      },
      (e: unknown) => {
        // The worker failed: say the file went unchecked rather than show nothing.
        this.log.warn(`config: background check of ${vscode.workspace.asRelativePath(doc.uri)} failed: ${e instanceof Error ? e.message : String(e)}`);
        const entry = this.results.get(key);
        if (!doc.isClosed && entry?.version === version)
          this.collection.set(
            doc.uri,
            entry.result.diagnostics.map((d) => toVs(doc, d)),
          );
      },
    );
  }

  /** The Validate command asks explicitly: a file held back after a crash is checked again. */
  validateNow(doc: vscode.TextDocument): ValidateResult | undefined {
    this.guard.clear(doc.uri.toString());
    if (this.results.get(doc.uri.toString())?.result.diagnostics.some((d) => d.code === 'RFT009')) this.results.delete(doc.uri.toString());
    return this.validate(doc);
  }

  resultFor(doc: vscode.TextDocument): ValidateResult | undefined {
    const e = this.results.get(doc.uri.toString());
    return e && e.version === doc.version ? e.result : this.validate(doc);
  }

  private forget(uri: vscode.Uri): void {
    const key = uri.toString();
    this.results.delete(key);
    const t = this.timers.get(key);
    if (t) clearTimeout(t);
    this.timers.delete(key);
    // Closed files keep no squiggles unless the validate command put them there for the whole workspace.
    if (!this.pinned.has(key)) this.collection.delete(uri);
  }

  private readonly pinned = new Set<string>();

  /** Used by the validate command for files that are not open. */
  setForFile(uri: vscode.Uri, text: string, result: ValidateResult): void {
    this.pinned.add(uri.toString());
    const lines = new LineIndex(text);
    this.collection.set(
      uri,
      result.diagnostics.map((d) => {
        const v = new vscode.Diagnostic(
          new vscode.Range(toPosition(lines.positionAt(d.start)), toPosition(lines.positionAt(d.end))),
          d.message,
          SEVERITY[d.severity],
        );
        v.code = d.code;
        v.source = DIAGNOSTIC_SOURCE;
        return v;
      }),
    );
  }

  dispose(): void {
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    for (const s of this.subs) s.dispose();
  }
}

function stoppedLastTime(text: string): ValidateResult {
  return {
    kind: undefined,
    diagnostics: [
      {
        start: 0,
        end: Math.min(1, text.length),
        severity: 'error',
        code: 'RFT009',
        message:
          'The last check of this file did not finish: the extension host stopped during it. It is not checked again on its own; save the file or run "Fine-Tune: Validate Training Config" to check it again, and please report it.',
      },
    ],
  };
}

const toPosition = (p: LineCol): vscode.Position => new vscode.Position(p.line, p.character);

export function toVs(doc: vscode.TextDocument, d: ConfigDiagnostic): vscode.Diagnostic {
  const v = new vscode.Diagnostic(new vscode.Range(doc.positionAt(d.start), doc.positionAt(d.end)), d.message, SEVERITY[d.severity]);
  v.code = d.code;
  v.source = DIAGNOSTIC_SOURCE;
  return v;
}
