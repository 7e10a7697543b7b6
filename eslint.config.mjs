// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'out/**', '.test-output/**', 'test/fixtures/**', 'python-runner/**', '**/*.js', '**/*.mjs', '**/*.cjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/consistent-type-imports': ['error', { prefer: 'type-imports', fixStyle: 'separate-type-imports' }],
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-syntax': ['error', { selector: 'ExportDefaultDeclaration', message: 'Use named exports.' }],
      // Prettier (npm run format) wraps code at 160; what it cannot wrap is a long string or template (a
      // message), a regular expression or a URL, which stay whole so they can be searched for.
      'max-len': ['error', { code: 160, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreRegExpLiterals: true, ignoreUrls: true }],
    },
  },
  // The layers (test/unit/architecture/importGraph.test.ts checks the whole graph, cycles too; these rules say
  // it in the editor as the import is typed).
  {
    // core is shared with the CLI and tested without VS Code: it must never reach for the editor API, nor up
    // into the features, the extension, the CLI or the webviews. Of the webview protocol it takes types only:
    // a shape the host sends (the compare model) is defined once, there.
    files: ['src/core/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'vscode', message: 'src/core must not import vscode; put editor code in src/features.' }],
          patterns: [
            {
              group: ['**/features/**', '**/extension', '**/cli/**', '**/webview/**'],
              message: 'src/core imports only src/core (and libraries).',
            },
            { group: ['**/protocol/**'], allowTypeImports: true, message: 'src/core takes only types from src/protocol (import type).' },
          ],
        },
      ],
    },
  },
  {
    files: ['src/cli/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'vscode', message: 'src/cli must not import vscode.' }],
          patterns: [{ group: ['**/features/**', '**/extension', '**/webview/**'], message: 'The CLI is built on src/core only.' }],
        },
      ],
    },
  },
  {
    // The message protocol is shared by the extension and the webviews: it depends on nothing of ours.
    files: ['src/protocol/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'vscode', message: 'src/protocol must not import vscode.' }],
          patterns: [{ group: ['../*', '!./*'], message: 'src/protocol imports nothing outside itself.' }],
        },
      ],
    },
  },
  {
    files: ['webview/src/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'vscode', message: 'A webview runs in a browser: no vscode module.' }],
          patterns: [
            {
              group: ['**/src/core/**', '**/src/features/**', '**/src/cli/**', '**/extension'],
              message: 'A webview imports only src/protocol and its own files.',
            },
          ],
        },
      ],
    },
  },
  {
    // Notification, progress, quick pick, status bar and tree item text is parsed for [label](command:…) links
    // (hovers and tooltips for markdown) and much of ours comes from hosts: these surfaces are reached only
    // through src/features/notify.ts and linkSafeUi.ts, which make the text link-safe
    // (test/unit/architecture/linkSafeSurfaces.test.ts holds the same over the code).
    files: ['src/features/**/*.ts', 'src/extension.ts'],
    ignores: ['src/features/notify.ts', 'src/features/linkSafeUi.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        { selector: 'ExportDefaultDeclaration', message: 'Use named exports.' },
        {
          selector: "MemberExpression[property.name=/^show(Error|Warning|Information)Message$/][object.property.name='window']",
          message: 'Use the same-named function of src/features/notify.ts (link-free text).',
        },
        {
          selector:
            "MemberExpression[property.name=/^(withProgress|showQuickPick|createQuickPick|createStatusBarItem|setStatusBarMessage)$/][object.property.name='window']",
          message: 'Use the same-named function of src/features/linkSafeUi.ts (link-safe text).',
        },
        {
          selector: 'NewExpression[callee.property.name=/^(TreeItem|MarkdownString|Hover)$/]',
          message: 'Use treeItem, textTooltip or markdownHover of src/features/linkSafeUi.ts (link-safe text, escaped markdown).',
        },
      ],
    },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts'],
    rules: { 'no-restricted-syntax': 'off' },
  },
);
