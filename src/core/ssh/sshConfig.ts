// Resolves a host alias the way OpenSSH's ssh(1) does for the options this extension honours. The maintained
// `ssh-config` package parses each file into lines; reading them in order with Includes (sshConfigWalk.ts),
// deciding which Host and Match sections apply (sshConfigMatch.ts), first value wins and %-tokens follow
// OpenSSH 9.2's readconf.c and ssh.c, because that package's compute() differs from OpenSSH where it matters
// (`?` also matching nothing, no negated Match criteria, keywords only honoured in one spelling, no Include).
// test/unit/ssh/sshConfigVsOpenssh.test.ts checks all of this against `ssh -G`.
import { createHash } from 'node:crypto';
import { homedir, hostname as localHostName, userInfo } from 'node:os';
import { join } from 'node:path';
import type { Directive } from 'ssh-config';
import { argsOf, commandOf, expandTilde, walkConfig } from './sshConfigWalk';
import { hostLineMatches, hostNameOf, matchLineMatches } from './sshConfigMatch';
import type { Collected, Pass } from './sshConfigMatch';
import { effectiveCiphers } from './sshCiphers';

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
  /** GlobalKnownHostsFile, expanded; OpenSSH's default /etc/ssh/ssh_known_hosts{,2}; empty for `none`. */
  readonly globalKnownHostsFiles: readonly string[];
  /** Lowercased, as OpenSSH looks it up. */
  readonly hostKeyAlias?: string;
  /** One of yes, no, ask, accept-new (OpenSSH's synonyms true/false/off are folded in). */
  readonly strictHostKeyChecking?: 'yes' | 'no' | 'ask' | 'accept-new';
  /**
   * IdentityAgent as `ssh -G` prints it: a socket path (~, %-tokens and ${ENV} expanded), or `none`,
   * `SSH_AUTH_SOCK` or `$VAR`, which are read from the environment when connecting (agentSocketFor in auth.ts).
   * A 1Password, Secretive or KeePassXC agent is named this way.
   */
  readonly identityAgent?: string;
  /** Ciphers, resolved as `ssh -G` prints them (sshCiphers.ts); absent when the config does not set it. */
  readonly ciphers?: readonly string[];
  /** Why the config's Ciphers value is refused (OpenSSH refuses to connect then, and so do we). */
  readonly ciphersError?: string;
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

/**
 * ProxyJump and ProxyCommand, as readconf.c has them since OpenSSH 10.3 (also in Debian's 9.2p1-2+deb12u10):
 * a ProxyCommand, even `none`, shuts out every later ProxyJump; a ProxyJump to a host shuts out both later
 * keywords; `ProxyJump none` only shuts out later ProxyJumps, so a later ProxyCommand still applies. (Older
 * releases also let `ProxyJump none` shut out a later ProxyCommand.)
 */
function collectProxy(key: 'proxyjump' | 'proxycommand', d: Directive, c: Collected): void {
  if (key === 'proxycommand') {
    c.proxyCommand ??= commandOf(d);
    return;
  }
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

/** Reads the config once (twice when a `Match final` asks for it) for the host as typed. */
function collectOptions(path: string, home: string, hostArg: string, pass: Omit<Pass, 'hostArg' | 'final' | 'wantFinal'>): void {
  const run = (p: Pass): void =>
    walkConfig(
      path,
      home,
      {
        section: (d, neverMatch) => {
          const m = /^host$/i.test(d.param) ? hostLineMatches(argsOf(d), hostArg) : matchLineMatches(argsOf(d), p);
          return m && !neverMatch;
        },
        directive: (d, active) => {
          if (active) collect(d, p.collected);
        },
      },
      true,
      false,
      0,
    );
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

const STRICT_HOST_KEY_CHECKING: Readonly<Record<string, 'yes' | 'no' | 'ask' | 'accept-new'>> = {
  yes: 'yes',
  true: 'yes',
  no: 'no',
  false: 'no',
  off: 'no',
  ask: 'ask',
  'accept-new': 'accept-new',
};

function localUserName(): string {
  try {
    return userInfo().username;
  } catch {
    return process.env.USER ?? process.env.USERNAME ?? 'root';
  }
}

/**
 * OpenSSH's percent_dollar_expand() for file names: ${VAR} from the environment, %x from `tokens`, %% a
 * percent, in one pass (an expanded value is never expanded again). Unknown ones stay as written.
 */
function expandTokens(s: string, tokens: Readonly<Record<string, string>>): string {
  return s.replace(/\$\{([^}]+)\}|%(.)/gs, (m, env: string | undefined, t: string | undefined) => {
    if (env !== undefined) return process.env[env] ?? m;
    return t === '%' ? '%' : (tokens[t ?? ''] ?? m);
  });
}

/** The tokens ssh.c offers IdentityFile and UserKnownHostsFile (DEFAULT_CLIENT_PERCENT_EXPAND_ARGS). */
function fileTokens(
  h: { hostArg: string; hostName: string; port: number; user: string; hostKeyAlias?: string | undefined },
  home: string,
  localUser: string,
): Record<string, string> {
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
  if (jump)
    return {
      proxyJump: jump
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
        .map(jumpHop),
    };
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
  walkConfig(
    source.path ?? join(home, '.ssh', 'config'),
    home,
    {
      section: (d) => {
        if (/^host$/i.test(d.param)) for (const h of argsOf(d)) if (h && !/[*?!]/.test(h) && !hosts.includes(h)) hosts.push(h);
        return true;
      },
      directive: () => undefined,
    },
    true,
    false,
    0,
  );
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
  const globalKnown = c.first.get('globalknownhostsfile') ?? ['/etc/ssh/ssh_known_hosts', '/etc/ssh/ssh_known_hosts2'];
  const strict = STRICT_HOST_KEY_CHECKING[get('stricthostkeychecking')?.toLowerCase() ?? ''];
  const aliveInterval = parseTime(get('serveraliveinterval') ?? '');
  const aliveMax = get('serveralivecountmax');
  const { proxyJump, proxyCommand } = proxyOf(c);
  const agent = get('identityagent');
  const identityAgent = agent === undefined || /^(none|SSH_AUTH_SOCK|\$.*)$/i.test(agent) ? agent : expand(agent);
  const { ciphers, error: ciphersError } = effectiveCiphers(get('ciphers'));
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
    globalKnownHostsFiles: globalKnown[0]?.toLowerCase() === 'none' ? [] : globalKnown.map(expand),
    ...(proxyCommand ? { proxyCommand } : {}),
    ...(hostKeyAlias ? { hostKeyAlias } : {}),
    ...(strict ? { strictHostKeyChecking: strict } : {}),
    ...(identityAgent !== undefined ? { identityAgent } : {}),
    ...(ciphers ? { ciphers } : {}),
    ...(ciphersError ? { ciphersError } : {}),
  };
}
