// Hovers from the zod field descriptions (core/config/hover.ts); on a run spec's `target` block, also the run's
// time and cost there (specTimeCostOf.ts), the figures the Start confirmation gives.
import * as vscode from 'vscode';
import { markdownHover } from '../linkSafeUi';
import { hoverAt } from '../../core/config/hover';
import { pairAt } from '../../core/config/ast';
import { joinMarkdown, markdownEscaped, ourMarkdown } from '../../core/text/linkSafe';
import type { RunRecord } from '../../core/runs/store/runRecord';
import type { ConfigDiagnostics } from './configDiagnostics';
import { isConfigCandidate } from './configDiagnostics';
import { specTimeCostOf } from './specTimeCostOf';

export class ConfigHover implements vscode.HoverProvider {
  constructor(
    private readonly diagnostics: ConfigDiagnostics,
    private readonly history: () => readonly RunRecord[] = () => [],
  ) {}

  provideHover(doc: vscode.TextDocument, pos: vscode.Position): vscode.Hover | undefined {
    if (!isConfigCandidate(doc)) return undefined;
    const r = this.diagnostics.resultFor(doc);
    const kind = r?.kind;
    if (!kind) return undefined;
    const offset = doc.offsetAt(pos);
    const h = hoverAt(doc.getText(), doc.fileName, offset, kind);
    if (!h) return undefined;
    const target = kind === 'runspec' ? pairAt(r.root, ['target']) : undefined;
    const inTarget = target !== undefined && offset >= target.key.start && offset <= (target.value?.end ?? target.key.end);
    const tc = inTarget ? specTimeCostOf(doc, r, this.history()) : undefined;
    // The figures carry workspace text (data paths, instance types): escaped, never markup.
    const markdown = tc
      ? joinMarkdown([h.markdown, ourMarkdown('**Time and cost**'), markdownEscaped(tc.lens), markdownEscaped(tc.detail)], '\n\n')
      : h.markdown;
    return markdownHover(markdown, new vscode.Range(doc.positionAt(h.start), doc.positionAt(h.end)));
  }
}
