// Resolves a host alias the way OpenSSH does for the options this extension honours, using the maintained
// `ssh-config` parser. That parser has no Include, so Include lines are expanded here before parsing.
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, basename } from 'node:path';
import { parse as parseSshConfig, LineType } from 'ssh-config';

export interface ResolvedHost {
  /** The alias the user typed (what known_hosts is checked against when HostKeyAlias is absent). */
  readonly alias: string;
  readonly hostName: string;
  readonly port: number;
  readonly user: string;
  readonly identityFiles: readonly string[];
  readonly identitiesOnly: boolean;
  /** Jump hosts in order, each as given ([user@]host[:port] or an alias). */
  readonly proxyJump: readonly string[];
  /** ProxyCommand, unexpanded (%h %p %r %n); only when no ProxyJump applies. */
  readonly proxyCommand?: string;
  /** Seconds; 0 when unset. */
  readonly serverAliveInterval: number;
  readonly serverAliveCountMax: number;
  readonly userKnownHostsFiles: readonly string[];
  readonly hostKeyAlias?: string;
  readonly strictHostKeyChecking?: string;
}

export interface SshConfigSource {
  /** Path of the user's ssh config; defaults to ~/.ssh/config. */
  readonly path?: string;
  /** Local user name used when the config names none. */
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

function expandTilde(p: string, home: string): string {
  return p === '~' ? home : p.startsWith('~/') ? join(home, p.slice(2)) : p;
}

function globFiles(pattern: string): string[] {
  const dir = dirname(pattern);
  const base = basename(pattern);
  if (!/[*?]/.test(base)) return existsSync(pattern) ? [pattern] : [];
  if (!existsSync(dir)) return [];
  const re = new RegExp(`^${base.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`);
  return readdirSync(dir).filter((n) => re.test(n)).sort().map((n) => join(dir, n));
}

/** Reads a config file with its Includes inlined (relative Include paths are relative to ~/.ssh). */
export function readSshConfigText(path: string, home: string, depth = 0): string {
  if (depth > 16 || !existsSync(path)) return '';
  const text = readFileSync(path, 'utf8');
  const out: string[] = [];
  for (const line of text.split(/\r?\n/)) {
    const m = /^\s*Include\s*[=\s]\s*(.+?)\s*$/i.exec(line);
    if (!m?.[1]) { out.push(line); continue; }
    for (const raw of m[1].split(/\s+/)) {
      const p = expandTilde(raw.replace(/^"|"$/g, ''), home);
      const abs = isAbsolute(p) ? p : join(home, '.ssh', p);
      for (const f of globFiles(abs)) out.push(readSshConfigText(f, home, depth + 1));
    }
  }
  return out.join('\n');
}

function first(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

function all(v: string | string[] | undefined): string[] {
  return v === undefined ? [] : Array.isArray(v) ? v : [v];
}

/** Aliases declared with `Host` lines that name a concrete host (no wildcard, no negation). */
export function listConfiguredHosts(source: SshConfigSource = {}): string[] {
  const home = source.home ?? homedir();
  const config = parseSshConfig(readSshConfigText(source.path ?? join(home, '.ssh', 'config'), home));
  const hosts: string[] = [];
  for (const line of config) {
    if (line.type !== LineType.DIRECTIVE || line.param.toLowerCase() !== 'host') continue;
    const values = typeof line.value === 'string' ? line.value.split(/\s+/) : line.value.map((v) => v.val);
    for (const h of values) if (h && !/[*?!]/.test(h) && !hosts.includes(h)) hosts.push(h);
  }
  return hosts;
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

/** Computes the effective options for `alias` (Host patterns, Match host/user, first-value-wins as in OpenSSH). */
export function resolveHost(alias: string, source: SshConfigSource = {}): ResolvedHost {
  const home = source.home ?? homedir();
  const config = parseSshConfig(readSshConfigText(source.path ?? join(home, '.ssh', 'config'), home));
  const spec = parseHostSpec(alias);
  const name = spec?.host ?? alias;
  // `Match exec` would run arbitrary commands from the config while we only compute options; skip it.
  const c = config.compute({ Host: name, ...(spec?.user ? { User: spec.user } : {}) }, { ignoreCase: true, matchExec: false });
  const get = (k: string): string | undefined => first(c[k.toLowerCase()]);
  const hostName = (get('HostName') ?? name).replace(/%h/g, name);
  const user = spec?.user ?? get('User') ?? source.defaultUser ?? process.env.USER ?? 'root';
  const port = spec?.port ?? Number(get('Port') ?? 22);
  const identityFiles = all(c.identityfile).map((f) => expandTilde(f.replace(/%d/g, home).replace(/%u/g, user).replace(/%h/g, hostName).replace(/%r/g, user), home));
  const proxy = get('ProxyJump');
  const proxyCommand = get('ProxyCommand');
  const aliveInterval = Number(get('ServerAliveInterval') ?? 0);
  const aliveMax = Number(get('ServerAliveCountMax') ?? 3);
  const knownFiles = all(c.userknownhostsfile).flatMap((v) => v.split(/\s+/)).filter(Boolean).map((f) => expandTilde(f, home));
  const hostKeyAlias = get('HostKeyAlias');
  const strict = get('StrictHostKeyChecking');
  return {
    alias: name,
    hostName,
    port: Number.isInteger(port) && port > 0 && port < 65536 ? port : 22,
    user,
    identityFiles,
    identitiesOnly: (get('IdentitiesOnly') ?? 'no').toLowerCase() === 'yes',
    proxyJump: proxy && proxy.toLowerCase() !== 'none' ? proxy.split(',').map((s) => s.trim()).filter(Boolean) : [],
    serverAliveInterval: Number.isFinite(aliveInterval) && aliveInterval > 0 ? aliveInterval : 0,
    serverAliveCountMax: Number.isFinite(aliveMax) && aliveMax > 0 ? aliveMax : 3,
    userKnownHostsFiles: knownFiles.length > 0 ? knownFiles : [join(home, '.ssh', 'known_hosts'), join(home, '.ssh', 'known_hosts2')],
    ...(proxyCommand && proxyCommand.toLowerCase() !== 'none' && !(proxy && proxy.toLowerCase() !== 'none') ? { proxyCommand } : {}),
    ...(hostKeyAlias ? { hostKeyAlias } : {}),
    ...(strict ? { strictHostKeyChecking: strict } : {}),
  };
}
