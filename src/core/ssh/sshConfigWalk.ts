// Reading ssh_config files in OpenSSH's order: each file parsed by the maintained `ssh-config` package, Include
// lines followed where they stand (globs, ~ and relative paths as OpenSSH resolves them).
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { isAbsolute, join, parse as parsePath, sep } from 'node:path';
import { parse as parseSshConfig, LineType } from 'ssh-config';
import type { Directive, Line } from 'ssh-config';
import { escapeRegExp } from './sshConfigMatch';

// OpenSSH gives up past this many nested Includes (READCONF_MAX_DEPTH); we stop reading deeper.
const MAX_INCLUDE_DEPTH = 16;

/** The arguments of a parsed line, quotes already removed by the parser. */
export function argsOf(d: Directive): string[] {
  return typeof d.value === 'string' ? [d.value] : d.value.map((v) => v.val);
}

/** ProxyCommand is the rest of its line for OpenSSH; the parser splits it into words, so join them back. */
export function commandOf(d: Directive): string {
  if (typeof d.value === 'string') return d.value;
  return d.value
    .map((v) => `${v.separator}${v.quoted ? `"${v.val.replace(/"/g, '\\"')}"` : v.val}`)
    .join('')
    .trim();
}

function parseFile(path: string): Line[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return [];
  }
  return parseSshConfig(text);
}

/** `~` and `~/…` are the home directory, as tilde_expand_filename() has it (`~user` is left as written). */
export function expandTilde(p: string, home: string): string {
  return p === '~' ? home : /^~[/\\]/.test(p) ? join(home, p.slice(2)) : p;
}

/** One path component of a glob(3) pattern as a RegExp: `*`, `?` and `[…]` (with `!` or `^` negating). */
function globComponent(part: string): RegExp {
  let re = '';
  for (let i = 0; i < part.length; i++) {
    const c = part[i]!;
    const close = c === '[' ? part.indexOf(']', i + 2) : -1;
    if (c === '*') re += '.*';
    else if (c === '?') re += '.';
    else if (close > 0) {
      re += `[${part
        .slice(i + 1, close)
        .replace(/^!/, '^')
        .replace(/\\/g, '\\\\')}]`;
      i = close;
    } else re += escapeRegExp(c);
  }
  return new RegExp(`^${re}$`, 's');
}

function isFile(p: string): boolean {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

/**
 * glob(3) as OpenSSH's Include calls it: wildcards in any path component, a leading dot only matched when the
 * pattern has one, results sorted bytewise (glob sorts by the C locale's collation, as OpenSSH runs it for
 * most users; a different LC_COLLATE may order oddly named files differently).
 */
export function globFiles(pattern: string): string[] {
  const root = parsePath(pattern).root;
  let found = [root];
  for (const part of pattern
    .slice(root.length)
    .split(sep === '\\' ? /[\\/]+/ : /\/+/)
    .filter(Boolean)) {
    if (!/[*?[]/.test(part)) {
      found = found.map((dir) => join(dir, part));
      continue;
    }
    const re = globComponent(part);
    found = found.flatMap((dir) => {
      let names: string[];
      try {
        names = readdirSync(dir);
      } catch {
        return [];
      }
      return names.filter((n) => (!n.startsWith('.') || part.startsWith('.')) && re.test(n)).map((n) => join(dir, n));
    });
  }
  return found.filter(isFile).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
}

/** The files one Include line names: relative paths are under ~/.ssh (a user config), each may be a glob. */
function includedFiles(args: readonly string[], home: string): string[] {
  return args.flatMap((arg) => globFiles(expandTilde(arg.startsWith('~') || isAbsolute(arg) ? arg : `~/.ssh/${arg}`, home)));
}

export interface Visitor {
  /** Whether a Host or Match section applies; `neverMatch` inside a file included from an inactive section. */
  section(d: Directive, neverMatch: boolean): boolean;
  directive(d: Directive, active: boolean): void;
}

/**
 * Reads one file in order, as read_config_file_depth() does. A file starts in the activity of the line that
 * included it, and once that Include returns the including file carries on where it was: an included file's
 * Host lines never decide what the lines after the Include apply to. A file included from a section that does
 * not apply can never apply anything, whatever its own Host lines say.
 */
export function walkConfig(path: string, home: string, v: Visitor, inherited: boolean, neverMatch: boolean, depth: number): void {
  let active = inherited;
  const apply = (d: Directive): void => {
    if (d.param.toLowerCase() !== 'include') return v.directive(d, active);
    if (depth >= MAX_INCLUDE_DEPTH) return;
    for (const f of includedFiles(argsOf(d), home)) walkConfig(f, home, v, active, neverMatch || !active, depth + 1);
  };
  for (const line of parseFile(path)) {
    if (line.type !== LineType.DIRECTIVE) continue;
    if (!('config' in line)) {
      apply(line);
      continue;
    }
    active = v.section(line, neverMatch);
    for (const sub of line.config) if (sub.type === LineType.DIRECTIVE) apply(sub);
  }
}
