// Client authentication in OpenSSH's order: ssh-agent, identity files (an encrypted one unlocked through a
// callback), then keyboard-interactive (PAM: a password, a one-time code) and password, each asked of the
// user through a callback. A method the server does not offer is never tried, so nobody is asked for a
// password by a server that only takes keys. Passphrases and passwords live in memory only.
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import type { AnyAuthMethod, AuthHandlerMiddleware, KeyboardInteractiveAuthMethod, ParsedKey } from 'ssh2';
import { filteredAgent, publicBlobsOf } from './agentFilter';
import type { ResolvedHost } from './sshConfig';
import type { SshModule } from './ssh2Module';

/** What the user is asked for a password or keyboard-interactive answer. */
export interface SecretPrompt {
  readonly kind: 'password' | 'keyboard-interactive';
  readonly user: string;
  readonly host: string;
  readonly port: number;
  /** The server's prompt ("Password: ", "Verification code: "), or "Password" for the password method. */
  readonly prompt: string;
  /** keyboard-interactive's name and instructions, when the server sent any. */
  readonly instructions?: string;
  /** Whether the answer may be shown while typed (a server-side choice; passwords never are). */
  readonly echo: boolean;
}

export interface AuthOptions {
  /** ssh-agent socket, over ssh_config's IdentityAgent and SSH_AUTH_SOCK. null disables the agent. */
  readonly agentSocket?: string | null;
  /** Asked for an encrypted identity file's passphrase; undefined skips that key. */
  readonly askPassphrase?: (keyPath: string) => Promise<string | undefined>;
  /** Passphrases the user already typed this session (memory only; shared across connections). */
  readonly passphraseCache?: Map<string, string>;
  /** Asked for a password or a keyboard-interactive answer; undefined gives that method up. Absent: neither is used. */
  readonly askSecret?: (prompt: SecretPrompt) => Promise<string | undefined>;
  /** Passwords that worked this session, by user@host:port (memory only), so a reconnect does not ask again. */
  readonly passwordCache?: Map<string, string>;
  readonly log?: (message: string) => void;
}

const defaultPassphrases = new Map<string, string>();
const defaultPasswords = new Map<string, string>();
// OpenSSH's NumberOfPasswordPrompts.
const SECRET_TRIES = 3;

/**
 * The agent socket, as ssh resolves it: the caller's choice, else ssh_config's IdentityAgent (`none` disables,
 * `SSH_AUTH_SOCK` or `$VAR` name an environment variable), else SSH_AUTH_SOCK.
 */
export function agentSocketFor(
  explicit: string | null | undefined,
  identityAgent: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  if (explicit !== undefined) return explicit ?? undefined;
  if (identityAgent === undefined || identityAgent === 'SSH_AUTH_SOCK') return env.SSH_AUTH_SOCK || undefined;
  if (identityAgent.toLowerCase() === 'none') return undefined;
  if (identityAgent.startsWith('$')) return env[identityAgent.slice(1)] || undefined;
  return identityAgent;
}

function defaultIdentityFiles(home: string): string[] {
  return ['id_ed25519', 'id_ecdsa', 'id_rsa'].map((n) => join(home, '.ssh', n)).filter((p) => existsSync(p));
}

async function unlockKey(ssh2: SshModule, path: string, options: AuthOptions): Promise<ParsedKey | undefined> {
  const cache = options.passphraseCache ?? defaultPassphrases;
  const data = readFileSync(path);
  const plain = ssh2.utils.parseKey(data);
  if (!(plain instanceof Error)) return plain;
  if (!/encrypted|passphrase/i.test(plain.message)) {
    options.log?.(`skipping ${path}: ${plain.message}`);
    return undefined;
  }
  for (let attempt = 0; attempt < 3; attempt++) {
    const cached = attempt === 0 ? cache.get(path) : undefined;
    const pass = cached ?? (await options.askPassphrase?.(path));
    if (pass === undefined) return undefined;
    const parsed = ssh2.utils.parseKey(data, pass);
    if (!(parsed instanceof Error)) {
      cache.set(path, pass);
      return parsed;
    }
    cache.delete(path);
  }
  return undefined;
}

/** A PAM prompt that asks for the account password (its answer may be remembered; a one-time code may not). */
function isPasswordPrompt(prompt: string, echo: boolean): boolean {
  return !echo && /pass(word|phrase)?\b/i.test(prompt) && !/code|token|otp|verification/i.test(prompt);
}

interface Step {
  /** The method name the server must offer for this step to run. */
  readonly method: 'publickey' | 'keyboard-interactive' | 'password';
  readonly run: () => Promise<AnyAuthMethod | undefined>;
}

export interface AuthHandler {
  readonly handler: AuthHandlerMiddleware;
  /** Call once the connection is authenticated: a password that was used is remembered for this session. */
  succeeded(): void;
}

export interface AuthTarget {
  readonly username: string;
  readonly host: string;
  readonly port: number;
  readonly resolved: ResolvedHost;
  /** Tried before the identity files ssh_config names. */
  readonly identityFile?: string;
  readonly home: string;
}

export function authHandlerFor(ssh2: SshModule, t: AuthTarget, options: AuthOptions): AuthHandler {
  const { username } = t;
  const agent = agentSocketFor(options.agentSocket, t.resolved.identityAgent);
  const files = [...(t.identityFile ? [t.identityFile] : []), ...t.resolved.identityFiles];
  const keyFiles = (files.length > 0 ? files : defaultIdentityFiles(t.home)).filter((p, i, a) => a.indexOf(p) === i && existsSync(p));
  const passwords = options.passwordCache ?? defaultPasswords;
  const cacheKey = `${username}@${t.host}:${t.port}`;
  // The password sent last and not yet known to be right: remembered on success, forgotten on failure.
  let pending: string | undefined;
  const steps: Step[] = [];
  if (agent) {
    // IdentitiesOnly: the agent may sign, but only for the configured identities.
    const only = t.resolved.identitiesOnly && keyFiles.length > 0;
    steps.push({
      method: 'publickey',
      run: async () => ({ type: 'agent', username, agent: only ? filteredAgent(ssh2, agent, publicBlobsOf(ssh2, keyFiles)) : agent }),
    });
  }
  for (const path of keyFiles) {
    steps.push({
      method: 'publickey',
      run: async () => {
        const key = await unlockKey(ssh2, path, options);
        return key ? { type: 'publickey', username, key } : undefined;
      },
    });
  }
  const ask = options.askSecret;
  if (ask) {
    let kbdGaveUp = false;
    let pwGaveUp = false;
    const askPassword = async (p: SecretPrompt, attempt: number): Promise<string | undefined> => {
      const cached = attempt === 0 ? passwords.get(cacheKey) : undefined;
      const answer = cached ?? (await ask(p));
      if (answer !== undefined) pending = answer;
      return answer;
    };
    for (let attempt = 0; attempt < SECRET_TRIES; attempt++) {
      steps.push({
        method: 'keyboard-interactive',
        run: async () => {
          if (kbdGaveUp) return undefined;
          const prompt: KeyboardInteractiveAuthMethod['prompt'] = (name, instructions, _lang, prompts, finish) => {
            const answers: string[] = [];
            const next = async (): Promise<void> => {
              for (const q of prompts) {
                const p: SecretPrompt = {
                  kind: 'keyboard-interactive',
                  user: username,
                  host: t.host,
                  port: t.port,
                  prompt: q.prompt,
                  echo: q.echo === true,
                  ...(name || instructions ? { instructions: [name, instructions].filter(Boolean).join('\n') } : {}),
                };
                const a = isPasswordPrompt(q.prompt, q.echo === true) ? await askPassword(p, attempt) : await ask(p);
                if (a === undefined) {
                  kbdGaveUp = true;
                  break;
                }
                answers.push(a);
              }
              // A cancelled prompt still answers the server (with what there is), which then fails this attempt.
              finish(answers);
            };
            next().catch(() => finish([]));
          };
          return { type: 'keyboard-interactive', username, prompt };
        },
      });
    }
    for (let attempt = 0; attempt < SECRET_TRIES; attempt++) {
      steps.push({
        method: 'password',
        run: async () => {
          if (pwGaveUp) return undefined;
          const password = await askPassword({ kind: 'password', user: username, host: t.host, port: t.port, prompt: 'Password', echo: false }, attempt);
          if (password === undefined) {
            pwGaveUp = true;
            return undefined;
          }
          return { type: 'password', username, password };
        },
      });
    }
  }
  // Each method keeps its own queue: a method the server does not take yet (a second factor, offered only
  // after partial success) is still there when it does.
  const order = ['publickey', 'keyboard-interactive', 'password'] as const;
  const queues = new Map(order.map((m) => [m, steps.filter((st) => st.method === m)]));
  let probed = false;
  // ssh2's typings omit `false` (no more methods), which its runtime documents and accepts.
  const none = false as unknown as AnyAuthMethod;
  const handler: AuthHandlerMiddleware = (methodsLeft, partial, next): void => {
    // Called again without partial success: the previous attempt failed, so a password sent with it was wrong.
    // (With partial success, as in `AuthenticationMethods password,keyboard-interactive`, it was right.)
    if (pending !== undefined && !partial) {
      passwords.delete(cacheKey);
      pending = undefined;
    }
    const step = async (): Promise<void> => {
      for (const method of order) {
        const queue = queues.get(method)!;
        if (queue.length === 0 || (methodsLeft && !methodsLeft.includes(method))) continue;
        if (method !== 'publickey' && methodsLeft === null && !probed) {
          // Nothing tried yet: ask the server which methods it takes (the "none" request OpenSSH starts with)
          // before anyone is prompted.
          probed = true;
          next({ type: 'none', username });
          return;
        }
        while (queue.length > 0) {
          const m = await queue.shift()!.run();
          if (m) {
            next(m);
            return;
          }
        }
      }
      next(none);
    };
    step().catch(() => next(none));
  };
  return {
    handler,
    succeeded: () => {
      if (pending !== undefined) passwords.set(cacheKey, pending);
      pending = undefined;
    },
  };
}
