// Environment variables that decide where a library on the GPU host sends credentials or data: a workspace
// that sets one chooses the server that receives the user's stored tokens (huggingface_hub sends
// `Authorization: Bearer $HF_TOKEN` to HF_ENDPOINT, wandb sends WANDB_API_KEY to WANDB_BASE_URL, a proxy or a
// CA bundle lets a server read every request, packages from a chosen index run with the whole env file).
// Shared by the .env diagnostic (RFT609) and the Start Training gate (core/runs/lifecycle/runEnv.ts).

/** Which of the user's stored tokens go where the variable points. */
export type Carries = 'hf' | 'wandb' | 'every' | 'none';

export interface EndpointVariable {
  /** What goes there, for "<VARIABLE> points <what> at <host>". */
  readonly what: string;
  readonly carries: Carries;
  /** The value is a file path (a CA bundle), not a URL. */
  readonly path?: boolean;
  /** Several URLs separated by blanks (pip's extra index). */
  readonly list?: boolean;
  /** Only these schemes are remote (MLflow also takes file:, sqlite:, a bare folder). */
  readonly schemes?: readonly string[];
  /** Origins the library uses by default: setting one of them redirects nothing. */
  readonly defaults?: readonly string[];
}

const HF: EndpointVariable = { what: 'Hugging Face Hub requests', carries: 'hf', defaults: ['https://huggingface.co'] };
const WANDB: EndpointVariable = { what: 'W&B requests', carries: 'wandb', defaults: ['https://api.wandb.ai'] };
const MLFLOW: EndpointVariable = { what: "the run's MLflow metrics and artifacts", carries: 'none', schemes: ['http:', 'https:'] };
const AWS: EndpointVariable = { what: 'AWS API requests (S3 data, checkpoints, uploads)', carries: 'none' };
const PROXY: EndpointVariable = { what: "the host's web requests (a proxy)", carries: 'every' };
const CA: EndpointVariable = { what: "the host's TLS trust (a CA bundle: whoever issued it can read HTTPS traffic)", carries: 'every', path: true };
const INDEX: EndpointVariable = {
  what: 'Python package installs (their code runs with the env file)',
  carries: 'every',
  list: true,
  defaults: ['https://pypi.org', 'https://files.pythonhosted.org'],
};

const EXACT: ReadonlyMap<string, EndpointVariable> = new Map([
  ['WANDB_BASE_URL', WANDB],
  ['REQUESTS_CA_BUNDLE', CA],
  ['CURL_CA_BUNDLE', CA],
  ['SSL_CERT_FILE', CA],
  ['SSL_CERT_DIR', CA],
  ['PIP_CERT', CA],
  ['PIP_INDEX_URL', INDEX],
  ['PIP_EXTRA_INDEX_URL', INDEX],
  ['PIP_FIND_LINKS', INDEX],
  ['UV_INDEX_URL', INDEX],
  ['UV_EXTRA_INDEX_URL', INDEX],
  ['UV_DEFAULT_INDEX', INDEX],
  ['UV_INDEX', INDEX],
  ['UV_FIND_LINKS', INDEX],
]);

/** The variable's meaning when it redirects credentials or data; undefined for any other name. */
export function endpointVariable(key: string): EndpointVariable | undefined {
  const exact = EXACT.get(key);
  if (exact) return exact;
  if (/^(HF|HUGGINGFACE|HUGGING_FACE|HUGGING_FACE_HUB)_([A-Z0-9_]+_)?(ENDPOINT|URL|URL_HOME|URL_TEMPLATE)$/.test(key)) return HF;
  if (/^MLFLOW_([A-Z0-9_]+_)?(URI|URL)$/.test(key)) return MLFLOW;
  if (/^AWS_ENDPOINT_URL(_[A-Z0-9_]+)?$/.test(key)) return AWS;
  // Proxies are read in either case (curl and requests take http_proxy); NO_PROXY only narrows them.
  if (/^[A-Z0-9_]*_PROXY$/i.test(key) && !/^NO_PROXY$/i.test(key)) return PROXY;
  return undefined;
}

export interface EndpointRedirect {
  readonly variable: string;
  readonly what: string;
  readonly carries: Carries;
  /** Shown to the person: host[:port], or the file's path. Never a URL's user:password. */
  readonly host: string;
  /** What an approval is remembered by: scheme://host[:port] (like URL.origin), or file:<path>. */
  readonly origin: string;
}

/** scheme://host[:port] for any scheme (URL.origin is "null" for socks5:// and the like); a bare host:port reads as http://, as curl and requests read a proxy. */
function originOf(raw: string): { origin: string; host: string; scheme: string } | undefined {
  const withScheme = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(raw) ? raw : `http://${raw}`;
  try {
    const u = new URL(withScheme);
    if (u.host === '') return undefined;
    return { origin: `${u.protocol}//${u.host}`, host: u.host, scheme: u.protocol };
  } catch {
    return undefined;
  }
}

/**
 * What setting `key` to `value` redirects: one entry per server (pip's extra index may list several); none
 * for another variable, an empty value, a library's default server, or an MLflow store on the host's disk.
 */
export function redirectsOf(key: string, value: string): EndpointRedirect[] {
  const v = endpointVariable(key);
  const text = value.trim();
  if (!v || text === '') return [];
  const base = { variable: key, what: v.what, carries: v.carries };
  if (v.path) return [{ ...base, host: text, origin: `file:${text}` }];
  const out: EndpointRedirect[] = [];
  for (const part of v.list ? text.split(/\s+/) : [text]) {
    if (v.schemes && !v.schemes.some((s) => part.toLowerCase().startsWith(s))) continue;
    const o = originOf(part);
    // Not a URL the library could reach: nothing is sent anywhere (the library fails), but say which text it is.
    const at = o ?? { origin: part, host: part.length > 80 ? `${part.slice(0, 77)}...` : part };
    if (v.defaults?.includes(at.origin)) continue;
    if (!out.some((r) => r.origin === at.origin)) out.push({ ...base, host: at.host, origin: at.origin });
  }
  return out;
}

/** Every redirect among the variables, in their order (the last value of a repeated name counts, as in the env file). */
export function endpointRedirects(env: Readonly<Record<string, string>>): EndpointRedirect[] {
  return Object.entries(env).flatMap(([k, v]) => redirectsOf(k, v));
}

const HF_TOKEN_NAMES = new Set(['HF_TOKEN', 'HUGGING_FACE_HUB_TOKEN', 'HUGGINGFACE_TOKEN', 'HUGGINGFACEHUB_API_TOKEN']);

/** Which of `secrets` (env names) go where the redirect points. */
export function carriedSecrets(r: Pick<EndpointRedirect, 'carries'>, secrets: readonly string[]): string[] {
  if (r.carries === 'every') return [...secrets];
  if (r.carries === 'hf') return secrets.filter((s) => HF_TOKEN_NAMES.has(s));
  if (r.carries === 'wandb') return secrets.filter((s) => s === 'WANDB_API_KEY');
  return [];
}
