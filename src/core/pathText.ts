// Path arithmetic on path text, for the checks that name files relative to a config (an env_file, an
// accelerate config): '/' and '\\' both separate, nothing touches the disk, and the same code runs for a
// workspace on Windows or Linux. node:path would pick one platform's rules.

/** The folder part of a path ('.' when there is none). */
export function dirName(p: string): string {
  const i = Math.max(p.lastIndexOf('/'), p.lastIndexOf('\\'));
  return i === -1 ? '.' : i === 0 ? '/' : p.slice(0, i);
}

/** `rel` resolved against `dir` ('.' and '..' folded); an absolute `rel` is returned as it is. */
export function join(dir: string, rel: string): string {
  if (rel.startsWith('/') || /^[A-Za-z]:[\\/]/.test(rel)) return rel;
  const parts = (dir === '.' ? [] : dir.split('/')).concat(rel.split('/'));
  const out: string[] = [];
  for (const p of parts) {
    if (p === '.' || (p === '' && out.length > 0)) continue;
    if (p === '..' && out.length > 0 && out[out.length - 1] !== '..' && out[out.length - 1] !== '') out.pop();
    else out.push(p);
  }
  return out.join('/') || '.';
}
