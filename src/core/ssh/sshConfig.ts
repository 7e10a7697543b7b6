// Resolves a host alias the way OpenSSH's ssh(1) does for the options this extension honours. The maintained
// `ssh-config` package parses each file into lines; evaluating them (Host and Match, Include, first value wins,
// %-tokens) is done here after OpenSSH 9.2's readconf.c and ssh.c, because that package's compute() differs
// from OpenSSH where it matters (`?` also matching nothing, no negated Match criteria, keywords only honoured
// in one spelling, no Include). test/unit/ssh/sshConfigVsOpenssh.test.ts checks all of this against `ssh -G`.
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { homedir, hostname as localHostName, userInfo } from 'node:os';
import { isIP } from 'node:net';
import { isAbsolute, join, parse as parsePath, sep } from 'node:path';
import { parse as parseSshConfig, LineType } from 'ssh-config';
import type { Directive, Line } from 'ssh-config';

export interface ResolvedHost {
  /** The name the user typed, without any user@ or :port (OpenSSH's %n). */
  readonly alias: string;
  /** HostName with %h expanded, lowercased unless it is an address (what known_hosts is checked against). */
  readonly hostName: string;
  readonly port: number;
  readonly user: string;
  /** IdentityFile entries, expanded (~, %-tokens, ${ENV}); empty when none is configured (see defaultIdentityFiles). */
  readonly identityFiles: readonly string[];
  readonly identitiesOnly: boolean;
  /** Jump hosts in order, each as [user@]host[:port] or an alias (ssh:// URIs are unwrapped). */
  readonly proxyJump: readonly string[];
  /** ProxyCommand, unexpanded (%h %p %r %n); only when it, not ProxyJump, was set first. */
  readonly proxyCommand?: string;
  /** Seconds; 0 when unset. */
  readonly serverAliveInterval: number;
  readonly serverAliveCountMax: number;
  /** Expanded; empty for `UserKnownHostsFile none`. */
  readonly userKnownHostsFiles: readonly string[];
  /** Lowercased, as OpenSSH looks it up. */
  readonly hostKeyAlias?: string;
  /** One of yes, no, ask, accept-new (OpenSSH's synonyms true/false/off are folded in). */
  readonly strictHostKeyChecking?: string;
}

export interface SshConfigSource {
  /** Path of the user's ssh config; defaults to ~/.ssh/config. */
  readonly path?: string;
  /** Remote user name used when neither the alias nor the config names one (instead of the local user). */
  readonly defaultUser?: string;
  readonly home?: string;
}

/**
 * The ssh_config to read: the extension's own setting, else Remote-SSH's `remote.SSH.configFile`, else
 * undefined (~/.ssh/config). Blank values count as unset; a leading ~ is the user's home.
 */
export function chooseSshConfigPath(own: string | undefined, remoteSsh: string | undefined, home: string): string | undefined {
  const v = own?.trim() || remoteSsh?.trim();
  return v ? v.replace(/^~(?=[/\\]|$)/, home) : undefined;
}

// OpenSSH gives up past this many nested Includes (READCONF_MAX_DEPTH); we stop reading deeper.
const MAX_INCLUDE_DEPTH = 16;

function escapeRegExp(s: string): string {
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
function hostLineMatches(patterns: readonly string[], hostArg: string): boolean {
  let active = false;
  for (const p of patterns) {
    const negated = p.startsWith('!');
    if (!matchPattern(hostArg, negated ? p.slice(1) : p)) continue;
    if (negated) return false;
    active = true;
  }
  return active;
}

/** The arguments of a parsed line, quotes already removed by the parser. */
function argsOf(d: Directive): string[] {
  return typeof d.value === 'string' ? [d.value] : d.value.map((v) => v.val);
}

/** ProxyCommand is the rest of its line for OpenSSH; the parser splits it into words, so join them back. */
function commandOf(d: Directive): string {
  if (typeof d.value === 'string') return d.value;
  return d.value.map((v) => `${v.separator}${v.quoted ? `"${v.val.replace(/"/g, '\\"')}"` : v.val}`).join('').trim();
}

function parseFile(path: string): Line[] {
  let text: string;
  try { text = readFileSync(path, 'utf8'); } catch { return []; }
  return parseSshConfig(text);
}

/** `~` and `~/…` are the home directory, as tilde_expand_filename() has it (`~user` is left as written). */
function expandTilde(p: string, home: string): string {
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
      re += `[${part.slice(i + 1, close).replace(/^!/, '^').replace(/\\/g, '\\\\')}]`;
      i = close;
    } else re += escapeRegExp(c);
  }
  return new RegExp(`^${re}$`, 's');
}

function isFile(p: string): boolean {
  try { return statSync(p).isFile(); } catch { return false; }
}

/**
 * glob(3) as OpenSSH's Include calls it: wildcards in any path component, a leading dot only matched when the
 * pattern has one, results sorted bytewise (glob sorts by the C locale's collation, as OpenSSH runs it for
 * most users; a different LC_COLLATE may order oddly named files differently).
 */
function globFiles(pattern: string): string[] {
  const root = parsePath(pattern).root;
  let found = [root];
  for (const part of pattern.slice(root.length).split(sep === '\\' ? /[\\/]+/ : /\/+/).filter(Boolean)) {
    if (!/[*?[]/.test(part)) { found = found.map((dir) => join(dir, part)); continue; }
    const re = globComponent(part);
    found = found.flatMap((dir) => {
      let names: string[];
      try { names = readdirSync(dir); } catch { return []; }
      return names.filter((n) => (!n.startsWith('.') || part.startsWith('.')) && re.test(n)).map((n) => join(dir, n));
    });
  }
  return found.filter(isFile).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
}

/** The files one Include line names: relative paths are under ~/.ssh (a user config), each may be a glob. */
function includedFiles(args: readonly string[], home: string): string[] {
  return args.flatMap((arg) => globFiles(expandTilde(arg.startsWith('~') || isAbsolute(arg) ? arg : `~/.ssh/${arg}`, home)));
}

interface Visitor {
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
function walkConfig(path: string, home: string, v: Visitor, inherited: boolean, neverMatch: boolean, depth: number): void {
  let active = inherited;
  const apply = (d: Directive): void => {
    if (d.param.toLowerCase() !== 'include') return v.directive(d, active);
    if (depth >= MAX_INCLUDE_DEPTH) return;
    for (const f of includedFiles(argsOf(d), home)) walkConfig(f, home, v, active, neverMatch || !active, depth + 1);
  };
  for (const line of parseFile(path)) {
    if (line.type !== LineType.DIRECTIVE) continue;
    if (!('config' in line)) { apply(line); continue; }
    active = v.section(line, neverMatch);
    for (const sub of line.config) if (sub.type === LineType.DIRECTIVE) apply(sub);
  }
}

/** The options one evaluation collects. */
interface Collected {
  /** The first value of each (lowercased) keyword: OpenSSH keeps the first one it reads. */
  readonly first: Map<string, string[]>;
  /** Every IdentityFile, in order, each once (add_identity_file() drops repeats). */
  readonly identityFiles: string[];
  /** The first ProxyCommand that counts, `none` included. */
  proxyCommand?: string;
  /** The first ProxyJump that counts, `none` included. */
  proxyJump?: string;
}

/**
 * ProxyJump and ProxyCommand, as readconf.c has them since OpenSSH 10.3 (also in Debian's 9.2p1-2+deb12u10):
 * a ProxyCommand, even `none`, shuts out every later ProxyJump; a ProxyJump to a host shuts out both later
 * keywords; `ProxyJump none` only shuts out later ProxyJumps, so a later ProxyCommand still applies. (Older
 * releases also let `ProxyJump none` shut out a later ProxyCommand.)
 */
function collectProxy(key: 'proxyjump' | 'proxycommand', d: Directive, c: Collected): void {
  if (key === 'proxycommand') { c.proxyCommand ??= commandOf(d); return; }
  if (c.proxyJump !== undefined || c.proxyCommand !== undefined) return;
  const v = argsOf(d).join(' ').trim();
  c.proxyJump = v;
  if (v.toLowerCase() !== 'none') c.proxyCommand = 'none';
}

function collect(d: Directive, c: Collected): void {
  const key = d.param.toLowerCase();
  if (key === 'identityfile') {
    const f = argsOf(d)[0];
    if (f && !c.identityFiles.includes(f)) c.identityFiles.push(f);
  } else if (key === 'proxyjump' || key === 'proxycommand') {
    collectProxy(key, d, c);
  } else if (!c.first.has(key)) {
    c.first.set(key, argsOf(d));
  }
}

/** HostName with %h (the name typed) and %% expanded, lowercased unless it is an address, as ssh.c does. */
function hostNameOf(c: Collected, hostArg: string): string {
  const raw = c.first.get('hostname')?.[0];
  const h = raw === undefined ? hostArg : raw.replace(/%([h%])/g, (_m, t: string) => (t === 'h' ? hostArg : '%'));
  return isIP(h) ? h : h.toLowerCase();
}

interface Pass {
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
    case 'host': return matchPatternList(hostNameOf(c, p.hostArg).toLowerCase(), arg, true) === 1;
    case 'originalhost': return matchPatternList(p.hostArg.toLowerCase(), arg, true) === 1;
    case 'user': return matchPatternList(c.first.get('user')?.[0] ?? p.fallbackUser, arg, false) === 1;
    case 'localuser': return matchPatternList(p.localUser, arg, false) === 1;
    // `Match exec` would run a command from the config just to compute options: never, so such a block never
    // applies. Criteria OpenSSH 9.2 does not know make it reject the config; here the block does not apply.
    default: return undefined;
  }
}

/** A Match line, as match_cfg_line(): every criterion must hold, `!` negates one, `all` stands alone. */
function matchLineMatches(args: readonly string[], p: Pass): boolean {
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

/** Reads the config once (twice when a `Match final` asks for it) for the host as typed. */
function collectOptions(path: string, home: string, hostArg: string, pass: Omit<Pass, 'hostArg' | 'final' | 'wantFinal'>): void {
  const run = (p: Pass): void => walkConfig(path, home, {
    section: (d, neverMatch) => {
      const m = /^host$/i.test(d.param) ? hostLineMatches(argsOf(d), hostArg) : matchLineMatches(argsOf(d), p);
      return m && !neverMatch;
    },
    directive: (d, active) => { if (active) collect(d, p.collected); },
  }, true, false, 0);
  const first: Pass = { ...pass, hostArg, final: false, wantFinal: false };
  run(first);
  if (!first.wantFinal) return;
  // ssh.c re-reads the whole config with HostName fixed to the final name; first values still win.
  pass.collected.first.set('hostname', [hostNameOf(pass.collected, hostArg)]);
  run({ ...pass, hostArg, final: true, wantFinal: false });
}

/** OpenSSH's convtime(): "90", "1m30s", "2h" … in seconds; undefined for anything else. */
function parseTime(s: string): number | undefined {
  if (!/^(\d+[smhdw]?)+$/i.test(s)) return undefined;
  const unit: Readonly<Record<string, number>> = { '': 1, s: 1, m: 60, h: 3600, d: 86400, w: 604800 };
  let total = 0;
  for (const [, n, u] of s.matchAll(/(\d+)([smhdw]?)/gi)) total += Number(n) * (unit[(u ?? '').toLowerCase()] ?? 1);
  return total;
}

const STRICT_HOST_KEY_CHECKING: Readonly<Record<string, string>> = {
  yes: 'yes', true: 'yes', no: 'no', false: 'no', off: 'no', ask: 'ask', 'accept-new': 'accept-new',
};

function localUserName(): string {
  try { return userInfo().username; } catch { return process.env.USER ?? process.env.USERNAME ?? 'root'; }
}

/**
 * OpenSSH's percent_dollar_expand() for file names: ${VAR} from the environment, %x from `tokens`, %% a
 * percent, in one pass (an expanded value is never expanded again). Unknown ones stay as written.
 */
function expandTokens(s: string, tokens: Readonly<Record<string, string>>): string {
  return s.replace(/\$\{([^}]+)\}|%(.)/gs, (m, env: string | undefined, t: string | undefined) => {
    if (env !== undefined) return process.env[env] ?? m;
    return t === '%' ? '%' : tokens[t ?? ''] ?? m;
  });
}

/** The tokens ssh.c offers IdentityFile and UserKnownHostsFile (DEFAULT_CLIENT_PERCENT_EXPAND_ARGS). */
function fileTokens(h: { hostArg: string; hostName: string; port: number; user: string; hostKeyAlias?: string | undefined }, home: string, localUser: string): Record<string, string> {
  const l = localHostName();
  return {
    C: createHash('sha1').update(`${l}${h.hostName}${h.port}${h.user}`).digest('hex'),
    L: l.split('.')[0] ?? l,
    i: String(process.getuid?.() ?? ''),
    k: h.hostKeyAlias ?? h.hostArg,
    l,
    n: h.hostArg,
    p: String(h.port),
    d: home,
    h: h.hostName,
    r: h.user,
    u: localUser,
  };
}

/** A ProxyJump hop as [user@]host[:port]: OpenSSH also takes ssh://[user@]host[:port] URIs there. */
function jumpHop(hop: string): string {
  return hop.replace(/^ssh:\/\/([^/]+)\/?$/, '$1');
}

function proxyOf(c: Collected): { proxyJump: string[]; proxyCommand?: string } {
  const jump = c.proxyJump && c.proxyJump.toLowerCase() !== 'none' ? c.proxyJump : undefined;
  if (jump) return { proxyJump: jump.split(',').map((s) => s.trim()).filter(Boolean).map(jumpHop) };
  const command = c.proxyCommand?.trim();
  return command && command.toLowerCase() !== 'none' ? { proxyJump: [], proxyCommand: command } : { proxyJump: [] };
}

function portOf(v: string | undefined): number {
  const n = v !== undefined && /^\d+$/.test(v) ? Number(v) : 22;
  return n > 0 && n < 65536 ? n : 22;
}

/** Parses "[user@]host[:port]" (also "[v6]:port"); returns undefined for anything else. Never throws. */
export function parseHostSpec(spec: string): { user?: string; host: string; port?: number } | undefined {
  const m = /^(?:([^@\s:]+)@)?(\[[^\]\s]+\]|[^@\s:[\]]+)(?::(\d{1,5}))?$/.exec(spec.trim());
  if (!m?.[2]) return undefined;
  const port = m[3] ? Number(m[3]) : undefined;
  if (port !== undefined && (port < 1 || port > 65535)) return undefined;
  const host = m[2].replace(/^\[|\]$/g, '');
  return { ...(m[1] ? { user: m[1] } : {}), host, ...(port !== undefined ? { port } : {}) };
}

/** Aliases declared with `Host` lines that name a concrete host (no wildcard, no negation), Includes read. */
export function listConfiguredHosts(source: SshConfigSource = {}): string[] {
  const home = source.home ?? homedir();
  const hosts: string[] = [];
  walkConfig(source.path ?? join(home, '.ssh', 'config'), home, {
    section: (d) => {
      if (/^host$/i.test(d.param)) for (const h of argsOf(d)) if (h && !/[*?!]/.test(h) && !hosts.includes(h)) hosts.push(h);
      return true;
    },
    directive: () => undefined,
  }, true, false, 0);
  return hosts;
}

/**
 * The effective options for `alias` as `ssh -G` computes them. A user@ or :port in `alias` acts like ssh's
 * -l and -p: set before the config is read, so they win over it, and Match user sees that user.
 */
export function resolveHost(alias: string, source: SshConfigSource = {}): ResolvedHost {
  const home = source.home ?? homedir();
  const spec = parseHostSpec(alias);
  const hostArg = spec?.host ?? alias;
  const localUser = localUserName();
  const c: Collected = { first: new Map(), identityFiles: [] };
  if (spec?.user) c.first.set('user', [spec.user]);
  if (spec?.port) c.first.set('port', [String(spec.port)]);
  collectOptions(source.path ?? join(home, '.ssh', 'config'), home, hostArg, { localUser, fallbackUser: source.defaultUser ?? localUser, collected: c });
  const get = (k: string): string | undefined => c.first.get(k)?.[0];
  const hostName = hostNameOf(c, hostArg);
  const user = get('user') ?? source.defaultUser ?? localUser;
  const port = portOf(get('port'));
  const hostKeyAlias = get('hostkeyalias')?.toLowerCase();
  const tokens = fileTokens({ hostArg, hostName, port, user, hostKeyAlias }, home, localUser);
  const expand = (f: string): string => expandTokens(expandTilde(f, home), tokens);
  const known = c.first.get('userknownhostsfile') ?? ['~/.ssh/known_hosts', '~/.ssh/known_hosts2'];
  const strict = STRICT_HOST_KEY_CHECKING[get('stricthostkeychecking')?.toLowerCase() ?? ''];
  const aliveInterval = parseTime(get('serveraliveinterval') ?? '');
  const aliveMax = get('serveralivecountmax');
  const { proxyJump, proxyCommand } = proxyOf(c);
  return {
    alias: hostArg,
    hostName,
    port,
    user,
    identityFiles: c.identityFiles.map(expand),
    identitiesOnly: ['yes', 'true'].includes(get('identitiesonly')?.toLowerCase() ?? ''),
    proxyJump,
    serverAliveInterval: aliveInterval ?? 0,
    serverAliveCountMax: aliveMax !== undefined && /^\d+$/.test(aliveMax) ? Number(aliveMax) : 3,
    userKnownHostsFiles: known[0]?.toLowerCase() === 'none' ? [] : known.map(expand),
    ...(proxyCommand ? { proxyCommand } : {}),
    ...(hostKeyAlias ? { hostKeyAlias } : {}),
    ...(strict ? { strictHostKeyChecking: strict } : {}),
  };
}
