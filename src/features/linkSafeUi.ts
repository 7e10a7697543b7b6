// The VS Code surfaces that parse links, codicons or markdown in their text, reached only through here (and
// notify.ts for notifications): progress titles and messages, quick picks, status bar items, tree items and
// their tooltips, hovers. Much of that text comes from hosts, logs, cloud APIs and the workspace, and a
// `[label](command:…)` in it would be a link that runs a command with the host's arguments; every string is
// made link-safe (core/text/linkSafe.ts) and markdown is taken only as SafeMarkdown. Our own text never needs a
// link. test/unit/architecture/linkSafeSurfaces.test.ts holds that nothing else in src touches these surfaces.
import * as vscode from 'vscode';
import { linkSafe } from '../core/text/linkSafe';
import type { SafeMarkdown } from '../core/text/linkSafe';
import { linkSafeValue, sanitiseOnSet, ShownItems } from './linkSafeProperties';

type ProgressStep = { message?: string; increment?: number };

/** vscode.window.withProgress with the title and every reported message link-safe. */
export function withProgress<R>(
  options: vscode.ProgressOptions,
  task: (progress: vscode.Progress<ProgressStep>, token: vscode.CancellationToken) => Thenable<R>,
): Thenable<R> {
  const safeOptions = options.title === undefined ? options : { ...options, title: linkSafe(options.title) };
  return vscode.window.withProgress(safeOptions, (progress, token) =>
    task({ report: (step) => progress.report(step.message === undefined ? step : { ...step, message: linkSafe(step.message) }) }, token),
  );
}

function safePickOptions<O extends vscode.QuickPickOptions>(options: O | undefined): O | undefined {
  if (!options) return undefined;
  return {
    ...options,
    ...(options.title !== undefined ? { title: linkSafe(options.title) } : {}),
    ...(options.placeHolder !== undefined ? { placeHolder: linkSafe(options.placeHolder) } : {}),
  };
}

/** vscode.window.showQuickPick over link-safe copies; what comes back is the caller's own items (or strings). */
export function showQuickPick(items: readonly string[], options?: vscode.QuickPickOptions & { canPickMany?: false }): Thenable<string | undefined>;
export function showQuickPick<T extends vscode.QuickPickItem>(
  items: readonly T[],
  options: vscode.QuickPickOptions & { canPickMany: true },
): Thenable<T[] | undefined>;
export function showQuickPick<T extends vscode.QuickPickItem>(
  items: readonly T[],
  options?: vscode.QuickPickOptions & { canPickMany?: false },
): Thenable<T | undefined>;
export async function showQuickPick<T extends vscode.QuickPickItem>(
  items: readonly (string | T)[],
  options?: vscode.QuickPickOptions,
): Promise<string | T | T[] | undefined> {
  const opts = safePickOptions(options);
  if (items.every((i): i is string => typeof i === 'string')) {
    const shown = items.map(linkSafe);
    const picked = await vscode.window.showQuickPick(shown, opts);
    return picked === undefined ? undefined : items[shown.indexOf(picked)];
  }
  const shown = new ShownItems<T>();
  const picked: T | T[] | undefined = await vscode.window.showQuickPick(shown.show(items as readonly T[]), opts);
  if (picked === undefined) return undefined;
  return Array.isArray(picked) ? shown.back(picked) : shown.back([picked])[0];
}

/**
 * vscode.window.createQuickPick whose title, placeholder and items are link-safe whenever set; `items`,
 * `activeItems`, `selectedItems` and the change events give the caller's own items back.
 */
export function createQuickPick<T extends vscode.QuickPickItem>(): vscode.QuickPick<T> {
  const qp = vscode.window.createQuickPick<T>();
  const shown = new ShownItems<T>();
  sanitiseOnSet(qp, 'title', linkSafeValue<string | undefined>);
  sanitiseOnSet(qp, 'placeholder', linkSafeValue<string | undefined>);
  for (const key of ['items', 'activeItems', 'selectedItems'] as const)
    sanitiseOnSet<vscode.QuickPick<T>, readonly T[]>(
      qp,
      key,
      (v) => shown.show(v),
      (v) => shown.back(v),
    );
  for (const key of ['onDidChangeActive', 'onDidChangeSelection'] as const) {
    const event = qp[key].bind(qp);
    Object.defineProperty(qp, key, {
      configurable: true,
      value: (listener: (items: readonly T[]) => unknown, thisArg?: unknown, disposables?: vscode.Disposable[]) =>
        event((items) => listener.call(thisArg, shown.back(items)), undefined, disposables),
    });
  }
  return qp;
}

/** vscode.window.createStatusBarItem whose text and tooltip are link-safe whenever set. */
export function createStatusBarItem(id: string, alignment?: vscode.StatusBarAlignment, priority?: number): vscode.StatusBarItem {
  const item = vscode.window.createStatusBarItem(id, alignment, priority);
  sanitiseOnSet(item, 'text', linkSafeValue<string>);
  sanitiseOnSet(item, 'tooltip', linkSafeValue<string | vscode.MarkdownString | undefined>);
  return item;
}

/** vscode.window.setStatusBarMessage with the text link-safe. */
export function setStatusBarMessage(text: string, hideAfterTimeout: number): vscode.Disposable {
  return vscode.window.setStatusBarMessage(linkSafe(text), hideAfterTimeout);
}

/** A TreeItem whose label, description and tooltip are link-safe whenever set (a tooltip with markup: textTooltip). */
export function treeItem(label: string, collapsibleState: vscode.TreeItemCollapsibleState): vscode.TreeItem {
  const item = new vscode.TreeItem(label, collapsibleState);
  for (const key of ['label', 'description', 'tooltip'] as const) sanitiseOnSet(item, key, linkSafeValue<unknown>);
  return item;
}

/** A rich tooltip that shows `text` as text: appended with MarkdownString.appendText, which escapes markdown (link syntax included). */
export function textTooltip(text: string, options: { supportThemeIcons?: boolean } = {}): vscode.MarkdownString {
  const tip = new vscode.MarkdownString(undefined, options.supportThemeIcons ?? false);
  tip.isTrusted = false;
  tip.appendText(text);
  return tip;
}

/** A hover of markdown whose outside text was escaped (SafeMarkdown), never trusted to run commands. */
export function markdownHover(markdown: SafeMarkdown, range?: vscode.Range): vscode.Hover {
  const md = new vscode.MarkdownString(markdown);
  md.isTrusted = false;
  md.supportHtml = false;
  return new vscode.Hover(md, range);
}
