// Where the host itself sends the end-of-run notification (python-runner/remote_finetune/notify.py): the
// runner posts when training ends, so the message arrives with VS Code closed and the laptop asleep. The
// targets come from the user's own settings only (a workspace could otherwise read every run's outcome),
// and travel like secrets, in the run's 0600 env file: a webhook URL or an ntfy topic is a password.
import { isLoopbackHostname } from '../../loopback';

/** The variables notify.py reads; the runner keeps them from the training script's environment. */
const NOTIFY_ENV_PREFIX = 'RFT_NOTIFY_';
const NOTIFY_WEBHOOK_ENV = 'RFT_NOTIFY_WEBHOOK';
const NOTIFY_NTFY_ENV = 'RFT_NOTIFY_NTFY_URL';

const DEFAULT_NTFY_SERVER = 'https://ntfy.sh';

interface NotifySettings {
  /** A URL taking a JSON POST with "text" (Slack, Mattermost, Teams workflows, generic) and "content" (Discord). */
  readonly webhookUrl?: string;
  /** An ntfy topic: anyone who knows it can read it, so it should be long and random. */
  readonly ntfyTopic?: string;
  /** The ntfy server; ntfy.sh unless self-hosted. */
  readonly ntfyServer?: string;
}

interface NotifyEnv {
  readonly env: Readonly<Record<string, string>>;
  /** Why a configured target is not used, in words for the user (never the URL itself: it is the secret). */
  readonly problems: readonly string[];
}

// ntfy's own rule for topic names (server: topicRegex): letters, digits, '_' and '-', at most 64.
const NTFY_TOPIC = /^[-_A-Za-z0-9]{1,64}$/;

/** Why a URL may not carry a notification, or undefined: https anywhere, plain http only to the host itself. */
function urlProblem(what: string, raw: string): string | undefined {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return `${what} is not a URL`;
  }
  if (u.protocol === 'https:') return undefined;
  if (u.protocol === 'http:' && isLoopbackHostname(u.hostname)) return undefined;
  return `${what} must be https (plain http only to the host itself), not ${u.protocol.replace(':', '')}`;
}

export function notifyEnv(s: NotifySettings): NotifyEnv {
  const env: Record<string, string> = {};
  const problems: string[] = [];
  const webhook = s.webhookUrl?.trim();
  if (webhook) {
    const p = urlProblem('the notification webhook URL', webhook);
    if (p) problems.push(p);
    else env[NOTIFY_WEBHOOK_ENV] = webhook;
  }
  const topic = s.ntfyTopic?.trim();
  if (topic) {
    const server = (s.ntfyServer?.trim() || DEFAULT_NTFY_SERVER).replace(/\/+$/, '');
    const p = NTFY_TOPIC.test(topic) ? urlProblem('the ntfy server', server) : 'the ntfy topic may hold only letters, digits, "_" and "-" (at most 64)';
    if (p) problems.push(p);
    else env[NOTIFY_NTFY_ENV] = `${server}/${topic}`;
  }
  return { env, problems };
}

/** The run's env without notification targets: only the user's settings decide where those go, never a workspace .env. */
export function withoutNotifyTargets(env: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter(([k]) => !k.startsWith(NOTIFY_ENV_PREFIX)));
}
