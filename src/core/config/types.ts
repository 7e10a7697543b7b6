// Shapes shared by every config check. Ranges are UTF-16 offsets into the text (what JavaScript
// strings and VS Code's document.positionAt use); the CLI turns them into 1-based line/column.
import type { FileRead } from './boundedRead';

export type Severity = 'error' | 'warning' | 'info';

export type ConfigKind = 'runspec' | 'accelerate' | 'deepspeed' | 'trainer' | 'sweep' | 'dotenv' | 'axolotl' | 'llamafactory';

export const CONFIG_KINDS: readonly ConfigKind[] = ['runspec', 'accelerate', 'deepspeed', 'trainer', 'sweep', 'dotenv', 'axolotl', 'llamafactory'];

export interface TextEdit {
  readonly start: number;
  readonly end: number;
  readonly newText: string;
}

/** A quick fix: edits inside the same document. */
export interface Fix {
  readonly title: string;
  readonly edits: readonly TextEdit[];
  readonly preferred?: boolean;
}

export interface ConfigDiagnostic {
  readonly start: number;
  readonly end: number;
  readonly severity: Severity;
  readonly code: string;
  readonly message: string;
  readonly fixes?: readonly Fix[];
}

/** File-system access the cross-file checks need; injectable so tests and the editor can supply their own. */
export interface FileAccess {
  /** The file's text, or why there is none; bounded (see boundedRead.ts): a config may name any path. */
  read(absPath: string): FileRead;
  exists(absPath: string): boolean;
  /** Whether git tracks this path; undefined when it cannot tell (not a repository, no git). */
  isTrackedByGit?(absPath: string): boolean | undefined;
}

/** The text of a read, or undefined when there was none (missing or refused). */
export function textOf(r: FileRead): string | undefined {
  return 'text' in r ? r.text : undefined;
}
