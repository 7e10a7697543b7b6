// The spec's time and cost (core/runs/cost/specTimeCost.ts) for the editor's CodeLens and hover, from the spec's latest
// check. The training file's example count is kept per file while its size and time do not change: lenses and
// hovers are asked for on every scroll and keystroke, and a large JSONL is not read again for each.
import type * as vscode from 'vscode';
import { statSync } from 'node:fs';
import { dirname } from 'node:path';
import type { ValidateResult } from '../../core/config/validate';
import { toValue } from '../../core/config/parse';
import { looseRunSpec } from '../../core/config/runSpecDefaults';
import type { LooseRunSpec } from '../../core/config/runSpecDefaults';
import { countExamples } from '../../core/runs/view/dataExamples';
import type { RunRecord } from '../../core/runs/store/runRecord';
import { specTimeCost } from '../../core/runs/cost/specTimeCost';
import type { SpecTimeCost } from '../../core/runs/cost/specTimeCost';

const counted = new Map<string, { readonly stamp: string; readonly n: number | undefined }>();

function countedExamples(absPath: string): number | undefined {
  let stamp: string;
  try {
    const st = statSync(absPath);
    stamp = `${st.size}:${st.mtimeMs}`;
  } catch {
    return undefined;
  }
  const hit = counted.get(absPath);
  if (hit?.stamp === stamp) return hit.n;
  const n = countExamples(absPath);
  if (counted.size > 64) counted.clear();
  counted.set(absPath, { stamp, n });
  return n;
}

/** The editor's spec as the schema typed it, or while it has errors the fields the schema accepts one by one. */
export function editorSpecOf(r: ValidateResult): LooseRunSpec {
  return r.runSpec ?? looseRunSpec(toValue(r.root));
}

export function specTimeCostOf(doc: vscode.TextDocument, r: ValidateResult | undefined, history: readonly RunRecord[]): SpecTimeCost | undefined {
  const e = r?.kind === 'runspec' ? r.estimate : undefined;
  if (!r || !e) return undefined;
  // An untitled spec has no folder: its data paths resolve nowhere and the length says why.
  const specDir = doc.uri.scheme === 'file' ? dirname(doc.uri.fsPath) : '';
  return specTimeCost({ spec: editorSpecOf(r), specDir, estimate: e, countExamples: countedExamples, history });
}
