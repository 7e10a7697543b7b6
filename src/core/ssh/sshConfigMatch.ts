// Host and Match evaluation for ssh_config, after OpenSSH 9.2's match.c and readconf.c: which sections apply
// to the host being resolved. The options they hold are collected by sshConfig.ts.
import { isIP } from 'node:net';

export function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/** OpenSSH's match_pattern(): `*` is any run of characters, `?` exactly one, everything else literal. */
function matchPattern(s: string, pattern: string): boolean {
  const body = [...pattern].map((c) => (c === '*' ? '.*' : c === '?' ? '.' : escapeRegExp(c))).join('');
  return new RegExp(`^${body}$`, 's').test(s);
}

/** OpenSSH's match_pattern_list(): comma-separated; a matching `!pattern` vetoes (-1), else 1 on any match. */
function matchPatternList(s: string, list: string, lowercase: boolean): -1 | 0 | 1 {
  let matched: 0 | 1 = 0;
  for (const raw of list.split(',')) {
    const negated = raw.startsWith('!');
    const pattern = negated ? raw.slice(1) : raw;
    if (!matchPattern(s, lowercase ? pattern.toLowerCase() : pattern)) continue;
    if (negated) return -1;
    matched = 1;
  }
  return matched;
}

/**
 * A `Host` line: whitespace-separated patterns (commas are literal there), matched case-sensitively against
 * the name as typed; one matching negated pattern voids the whole line.
 */
export function hostLineMatches(patterns: readonly string[], hostArg: string): boolean {
  let active = false;
  for (const p of patterns) {
    const negated = p.startsWith('!');
    if (!matchPattern(hostArg, negated ? p.slice(1) : p)) continue;
    if (negated) return false;
    active = true;
  }
  return active;
}

/** The options one evaluation collects. */
export interface Collected {
  /** The first value of each (lowercased) keyword: OpenSSH keeps the first one it reads. */
  readonly first: Map<string, string[]>;
  /** Every IdentityFile, in order, each once (add_identity_file() drops repeats). */
  readonly identityFiles: string[];
  /** The first ProxyCommand that counts, `none` included. */
  proxyCommand?: string;
  /** The first ProxyJump that counts, `none` included. */
  proxyJump?: string;
}

/** HostName with %h (the name typed) and %% expanded, lowercased unless it is an address, as ssh.c does. */
export function hostNameOf(c: Collected, hostArg: string): string {
  const raw = c.first.get('hostname')?.[0];
  const h = raw === undefined ? hostArg : raw.replace(/%([h%])/g, (_m, t: string) => (t === 'h' ? hostArg : '%'));
  return isIP(h) ? h : h.toLowerCase();
}

export interface Pass {
  readonly hostArg: string;
  readonly localUser: string;
  /** The remote user Match user sees while the config has named none. */
  readonly fallbackUser: string;
  /** The second pass that `Match final` asks for, with the host name settled. */
  readonly final: boolean;
  readonly collected: Collected;
  wantFinal: boolean;
}

/** One criterion of a Match line (host, originalhost, user, localuser) against what is known so far. */
function criterionMatches(attr: string, arg: string, p: Pass): boolean | undefined {
  const c = p.collected;
  switch (attr) {
    // Match host sees HostName as set so far (%h expanded), else the name typed; both sides lowercased.
    case 'host':
      return matchPatternList(hostNameOf(c, p.hostArg).toLowerCase(), arg, true) === 1;
    case 'originalhost':
      return matchPatternList(p.hostArg.toLowerCase(), arg, true) === 1;
    case 'user':
      return matchPatternList(c.first.get('user')?.[0] ?? p.fallbackUser, arg, false) === 1;
    case 'localuser':
      return matchPatternList(p.localUser, arg, false) === 1;
    // `Match exec` would run a command from the config just to compute options: never, so such a block never
    // applies. Criteria OpenSSH 9.2 does not know make it reject the config; here the block does not apply.
    default:
      return undefined;
  }
}

/** A Match line, as match_cfg_line(): every criterion must hold, `!` negates one, `all` stands alone. */
export function matchLineMatches(args: readonly string[], p: Pass): boolean {
  let result = true;
  let attributes = 0;
  for (let i = 0; i < args.length; i++) {
    const negate = args[i]!.startsWith('!');
    const attr = args[i]!.slice(negate ? 1 : 0).toLowerCase();
    if (attr === 'all') return attributes <= 1 && result && !negate;
    attributes++;
    if (attr === 'canonical' || attr === 'final') {
      if (attr === 'final') p.wantFinal = true;
      if (p.final === negate) result = false;
      continue;
    }
    const arg = args[++i];
    const r = arg === undefined ? undefined : criterionMatches(attr, arg, p);
    if (r === undefined) return false;
    if (r === negate) result = false;
  }
  return attributes > 0 && result;
}
