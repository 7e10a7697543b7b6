// Writes schemas/<kind>.schema.json from the zod schemas (npm run gen:schemas). A unit test fails
// when the committed files are out of date, so they never drift from the checks.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { allEditorSchemas, allJsonSchemas } from '../src/core/config/jsonSchemas';

const dir = join(__dirname, '..', 'schemas');
mkdirSync(dir, { recursive: true });
for (const [name, text] of allJsonSchemas()) {
  writeFileSync(join(dir, name), text);
  console.log(`schemas/${name}  ${(text.length / 1024).toFixed(1)} KiB`);
}
// The editor's copies leave validation to our diagnostics (jsonSchemas.ts editorSchema): package.json contributes these.
mkdirSync(join(dir, 'editor'), { recursive: true });
for (const [name, text] of allEditorSchemas()) {
  writeFileSync(join(dir, 'editor', name), text);
  console.log(`schemas/editor/${name}  ${(text.length / 1024).toFixed(1)} KiB`);
}
