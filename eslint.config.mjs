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
    },
  },
  {
    // core is shared with the CLI and tested without VS Code: it must never reach for the editor API.
    files: ['src/core/**/*.ts', 'src/cli/**/*.ts', 'src/protocol/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { paths: [{ name: 'vscode', message: 'src/core, src/cli and src/protocol must not import vscode; put editor code in src/features.' }] }],
    },
  },
  {
    // Notification text is parsed for [label](command:…) links and much of ours comes from hosts: every
    // notification goes through src/features/notify.ts, which makes the text link-free.
    files: ['src/features/**/*.ts', 'src/extension.ts'],
    ignores: ['src/features/notify.ts'],
    rules: {
      'no-restricted-syntax': ['error',
        { selector: 'ExportDefaultDeclaration', message: 'Use named exports.' },
        { selector: "MemberExpression[property.name=/^show(Error|Warning|Information)Message$/][object.property.name='window']",
          message: 'Use the same-named function of src/features/notify.ts (link-free text).' }],
    },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts'],
    rules: { 'no-restricted-syntax': 'off' },
  },
);
