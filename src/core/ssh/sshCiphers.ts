// The `Ciphers` option as OpenSSH 9.2 reads it (readconf.c → kex_assemble_names): a list replaces the default,
// `+list` appends to it, `-list` removes what its wildcard patterns match, `^list` puts it first. Only `-`
// takes patterns: elsewhere every name must be one OpenSSH knows exactly (ciphers_valid), else ssh refuses
// the config ("Bad SSH2 cipher spec"). Duplicates are dropped, the first place kept. The result is
// what `ssh -G` prints; the session then offers those that ssh2 implements, so a user's or a benchmark's
// `Ciphers aes128-gcm@openssh.com` means the same to us as to ssh(1).

/** OpenSSH's client default (myproposal.h KEX_CLIENT_ENCRYPT). */
export const OPENSSH_DEFAULT_CIPHERS = [
  'chacha20-poly1305@openssh.com',
  'aes128-ctr',
  'aes192-ctr',
  'aes256-ctr',
  'aes128-gcm@openssh.com',
  'aes256-gcm@openssh.com',
] as const;

/** Every cipher OpenSSH 9.2 knows, in cipher.c's order (what a pattern expands against). */
export const OPENSSH_ALL_CIPHERS = [
  '3des-cbc',
  'aes128-cbc',
  'aes192-cbc',
  'aes256-cbc',
  'aes128-ctr',
  'aes192-ctr',
  'aes256-ctr',
  'aes128-gcm@openssh.com',
  'aes256-gcm@openssh.com',
  'chacha20-poly1305@openssh.com',
] as const;

function patternRegExp(pattern: string): RegExp {
  const body = [...pattern].map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[.+^${}()|[\]\\/]/g, '\\$&'))).join('');
  return new RegExp(`^${body}$`);
}

/** match_pattern_list(): a name matches when a pattern matches and no `!pattern` does. */
function matchesList(name: string, patterns: readonly string[]): boolean {
  let hit = false;
  for (const p of patterns) {
    if (p.startsWith('!')) {
      if (patternRegExp(p.slice(1)).test(name)) return false;
    } else if (patternRegExp(p).test(name)) hit = true;
  }
  return hit;
}

/**
 * The effective cipher list for a `Ciphers` value (undefined: the option was not set), or an error naming
 * what OpenSSH would refuse ("Bad SSH2 cipher spec").
 */
export function effectiveCiphers(value: string | undefined): { ciphers?: string[]; error?: string } {
  if (value === undefined) return {};
  const v = value.trim();
  if (v === '') return { error: 'Ciphers is empty' };
  const items = (s: string): string[] =>
    s
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean);
  let list: string[];
  if (v.startsWith('-')) {
    const remove = items(v.slice(1));
    list = OPENSSH_DEFAULT_CIPHERS.filter((c) => !matchesList(c, remove));
  } else {
    const named = items(/^[+^]/.test(v) ? v.slice(1) : v);
    const unknown = named.find((n) => !(OPENSSH_ALL_CIPHERS as readonly string[]).includes(n));
    if (unknown !== undefined || named.length === 0)
      return { error: `Bad SSH2 cipher spec '${value}'${unknown !== undefined ? `: unknown cipher ${unknown}` : ''}` };
    list = v.startsWith('+') ? [...OPENSSH_DEFAULT_CIPHERS, ...named] : v.startsWith('^') ? [...named, ...OPENSSH_DEFAULT_CIPHERS] : named;
  }
  const out: string[] = [];
  for (const c of list) if (!out.includes(c)) out.push(c);
  if (out.length === 0) return { error: `Bad SSH2 cipher spec '${value}': it leaves no cipher` };
  return { ciphers: out };
}
