// Types for scripts/preflight.mjs (plain JS so it runs before `npm ci`), for the TypeScript that imports it.
export interface Requirement {
  id: string;
  why: string;
  for: string[];
  optional?: boolean;
  check: Record<string, unknown>;
  packages: Record<'apt' | 'dnf' | 'brew', string | string[] | null>;
  hint?: Partial<Record<'apt' | 'dnf' | 'brew', string>>;
}
export interface Plan {
  action: 'ok' | 'install' | 'print';
  argv?: string[][];
  line?: string;
  packages?: string[];
  required: Requirement[];
  optional: Requirement[];
  hints?: string[];
}
export const REQUIREMENTS: Requirement[];
export function findProgram(name: string, path?: string, extra?: string[]): string | undefined;
export function isMet(req: Requirement, env?: NodeJS.ProcessEnv): boolean;
export function detectManager(path?: string, platform?: NodeJS.Platform): 'apt' | 'dnf' | 'brew' | undefined;
export function installCommand(manager: string | undefined, packages: string[], root: boolean): { argv?: string[][]; line?: string };
export function decide(facts: { missing: Requirement[]; manager: string | undefined; root: boolean }): Plan;
export function main(purpose: string | undefined, env?: NodeJS.ProcessEnv, log?: (line: string) => void): number;
