// Hovers from the zod field descriptions (core/config/hover.ts).
import * as vscode from 'vscode';
import { markdownHover } from '../linkSafeUi';
import { hoverAt } from '../../core/config/hover';
import type { ConfigDiagnostics } from './configDiagnostics';
import { isConfigCandidate } from './configDiagnostics';

export class ConfigHover implements vscode.HoverProvider {
  constructor(private readonly diagnostics: ConfigDiagnostics) {}

  provideHover(doc: vscode.TextDocument, pos: vscode.Position): vscode.Hover | undefined {
    if (!isConfigCandidate(doc)) return undefined;
    const kind = this.diagnostics.resultFor(doc)?.kind;
    if (!kind) return undefined;
    const h = hoverAt(doc.getText(), doc.fileName, doc.offsetAt(pos), kind);
    if (!h) return undefined;
    return markdownHover(h.markdown, new vscode.Range(doc.positionAt(h.start), doc.positionAt(h.end)));
  }
}
