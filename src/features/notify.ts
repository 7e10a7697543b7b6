// Every notification of the extension goes through here: message text is made link-free (linkSafe),
// since much of it comes from hosts, logs and cloud APIs. Our own messages never need a link in the text.
import * as vscode from 'vscode';
import { linkSafe } from '../core/text/linkSafe';

type Show = <T extends string | vscode.MessageItem>(message: string, ...rest: Array<vscode.MessageOptions | T>) => Thenable<T | undefined>;
type RawShow = (message: string, ...rest: unknown[]) => Thenable<unknown>;

function safe(raw: () => RawShow): Show {
  return ((message: string, ...rest: unknown[]) => {
    const clean = rest.map((r) =>
      typeof r === 'object' && r !== null && 'detail' in r && typeof r.detail === 'string' ? { ...r, detail: linkSafe(r.detail) } : r,
    );
    return raw()(linkSafe(message), ...clean);
  }) as Show;
}

// Looked up at call time (tests stub vscode.window's functions).
export const showErrorMessage: Show = safe(() => vscode.window.showErrorMessage as RawShow);
export const showWarningMessage: Show = safe(() => vscode.window.showWarningMessage as RawShow);
export const showInformationMessage: Show = safe(() => vscode.window.showInformationMessage as RawShow);
