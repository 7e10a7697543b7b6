// Copies one of the examples shipped with the extension into the person's folder, never over their files.
// Free of `vscode` so the copy rules are tested directly.
import { cpSync, existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** The spec file every example folder holds. */
export const EXAMPLE_SPEC = 'finetune.yaml';

/** Examples under `root` (folders holding a finetune.yaml), sorted by name. */
export function listExamples(root: string): string[] {
  if (!existsSync(root)) return [];
  return readdirSync(root)
    .filter((name) => existsSync(join(root, name, EXAMPLE_SPEC)))
    .sort();
}

export interface CopiedExample {
  /** The example's finetune.yaml in the destination. */
  readonly spec: string;
  /** False when an earlier copy was found there and left as it was. */
  readonly created: boolean;
}

/**
 * Puts `examplesRoot/name` into `destRoot/name`. An earlier copy (a folder with its finetune.yaml) is reused
 * as the person left it; anything else already using the name gets the example beside it as name-2, name-3….
 */
export function copyExample(examplesRoot: string, name: string, destRoot: string): CopiedExample {
  const from = join(examplesRoot, name);
  if (!existsSync(join(from, EXAMPLE_SPEC))) throw new Error(`no example named ${name}`);
  for (let n = 1; n < 100; n++) {
    const dest = join(destRoot, n === 1 ? name : `${name}-${n}`);
    if (!existsSync(dest)) {
      cpSync(from, dest, { recursive: true, errorOnExist: true, force: false });
      return { spec: join(dest, EXAMPLE_SPEC), created: true };
    }
    if (statSync(dest).isDirectory() && existsSync(join(dest, EXAMPLE_SPEC))) return { spec: join(dest, EXAMPLE_SPEC), created: false };
  }
  throw new Error(`${destRoot} already has ${name} … ${name}-99`);
}
