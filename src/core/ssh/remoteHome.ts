// The host's $HOME is the root of every remote path this extension builds (runs, synced workspaces, the
// runner) and is shown in progress text. It is whatever the host says, so only a plain absolute path is
// taken: no control or invisible format characters (they rewrite what a terminal or a message shows), no
// link or markup syntax, no `.`/`..` segments, and a length a path can have.
const MAX_LENGTH = 4096;
// \p{Cc}: C0, DEL and C1 controls, newlines included; \p{Cf}: bidi overrides, zero-width characters.
const UNSEEN = /[\p{Cc}\p{Cf}\u2028\u2029]/u;
const MARKUP = /[[\]()<>`\\]/;

/** Why `text` is not a plain absolute path, or undefined when it is one. */
function homeProblem(text: string): string | undefined {
  if (!text.startsWith('/')) return 'it is not absolute';
  if (text.length > MAX_LENGTH) return `it is ${text.length} characters long`;
  if (UNSEEN.test(text)) return 'it holds control or invisible characters';
  if (MARKUP.test(text)) return 'it holds brackets, angle brackets, backquotes or backslashes';
  if (text.split('/').some((s) => s === '.' || s === '..')) return 'it has . or .. segments';
  return undefined;
}

export function isPlainAbsolutePath(text: string): boolean {
  return homeProblem(text) === undefined;
}

/** `home` when it is a plain absolute path; otherwise an error naming the host (the value itself is not echoed). */
export function checkedRemoteHome(host: string, home: string): string {
  const problem = homeProblem(home);
  if (problem === undefined) return home;
  throw new Error(
    `$HOME on ${host} is not a plain absolute path (${problem}); Remote Fine-Tune keeps its files under it. Set HOME to a plain directory such as /home/<user>.`,
  );
}
