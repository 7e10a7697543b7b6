// Finds, in a TypeScript source, every way around the link-safe wrappers (src/features/linkSafeUi.ts and
// notify.ts): a VS Code surface that parses links or markdown reached directly. Read with the TypeScript
// parser (no type checker): names are enough, since the rule is "only the wrappers touch these at all".
import ts from 'typescript';

/** vscode.window functions whose text VS Code parses for links, codicons or markdown. */
const WINDOW_SURFACES = new Set([
  'showInformationMessage',
  'showWarningMessage',
  'showErrorMessage',
  'withProgress',
  'showQuickPick',
  'createQuickPick',
  'createStatusBarItem',
  'setStatusBarMessage',
]);
/** vscode classes that carry link-parsed or markdown text. */
const CLASS_SURFACES = new Set(['TreeItem', 'MarkdownString', 'Hover']);
/** Markdown appended as is. */
const RAW_MARKDOWN_METHODS = new Set(['appendMarkdown']);

export interface Bypass {
  readonly file: string;
  readonly line: number;
  readonly what: string;
}

/**
 * The bypasses in one file. `wrapper`: the file is one of the wrappers (it may use the raw surfaces, but nothing
 * may make SafeMarkdown out of a plain string there either); `textCore`: src/core/text/linkSafe.ts, the one
 * place a string becomes SafeMarkdown.
 */
export function linkSafeBypasses(file: string, text: string, opts: { wrapper: boolean; textCore: boolean }): Bypass[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const out: Bypass[] = [];
  const at = (n: ts.Node, what: string): void => {
    out.push({ file, line: sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1, what });
  };
  const vscodeNames = new Set<string>();
  const visit = (n: ts.Node): void => {
    if (ts.isImportDeclaration(n) && ts.isStringLiteral(n.moduleSpecifier) && n.moduleSpecifier.text === 'vscode') {
      const b = n.importClause?.namedBindings;
      if (b && ts.isNamespaceImport(b)) vscodeNames.add(b.name.text);
      if (n.importClause?.name) vscodeNames.add(n.importClause.name.text);
      if (b && ts.isNamedImports(b) && !opts.wrapper)
        for (const el of b.elements) {
          const name = (el.propertyName ?? el.name).text;
          if (name === 'window' || CLASS_SURFACES.has(name)) at(el, `imports ${name} from vscode`);
        }
    }
    if (!opts.wrapper) {
      // window.showQuickPick, vscode.window['withProgress'], const { withProgress } = vscode.window
      if (ts.isPropertyAccessExpression(n) && WINDOW_SURFACES.has(n.name.text) && /(^|\.)window$/.test(n.expression.getText(sf)))
        at(n, `calls window.${n.name.text}`);
      if (ts.isElementAccessExpression(n) && /(^|\.)window$/.test(n.expression.getText(sf))) at(n, 'indexes vscode.window');
      // const w = vscode.window; w.withProgress(…)
      if (ts.isPropertyAccessExpression(n) && n.name.text === 'window' && vscodeNames.has(n.expression.getText(sf)))
        if (
          !(ts.isPropertyAccessExpression(n.parent) && n.parent.expression === n) &&
          !ts.isElementAccessExpression(n.parent) &&
          !(ts.isVariableDeclaration(n.parent) && ts.isObjectBindingPattern(n.parent.name))
        )
          at(n, 'aliases vscode.window');
      if (ts.isVariableDeclaration(n) && ts.isObjectBindingPattern(n.name) && n.initializer && /(^|\.)window$/.test(n.initializer.getText(sf)))
        at(n, 'destructures vscode.window');
      // new vscode.TreeItem(…), class X extends vscode.TreeItem
      const cls = ts.isNewExpression(n) ? n.expression : ts.isExpressionWithTypeArguments(n) ? n.expression : undefined;
      if (cls && ts.isPropertyAccessExpression(cls) && CLASS_SURFACES.has(cls.name.text) && vscodeNames.has(cls.expression.getText(sf)))
        at(n, `${ts.isNewExpression(n) ? 'constructs' : 'extends'} vscode.${cls.name.text}`);
      if (ts.isCallExpression(n) && ts.isPropertyAccessExpression(n.expression) && RAW_MARKDOWN_METHODS.has(n.expression.name.text))
        at(n, `calls .${n.expression.name.text}`);
    }
    if (!opts.textCore) {
      const asType = ts.isAsExpression(n) || ts.isTypeAssertionExpression(n) ? n.type.getText(sf) : undefined;
      if (asType && /\bSafeMarkdown\b/.test(asType)) at(n, 'casts to SafeMarkdown');
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}
