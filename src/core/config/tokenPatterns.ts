// Recognising real-looking credentials, so a token pasted into a config (or a tracked .env) is
// caught before it is committed or uploaded. Placeholders such as hf_your_token_here are not tokens.

// The third field marks a shape that a git commit id shares (so it is no token under a revision key).
const TOKEN_PATTERNS: ReadonlyArray<readonly [RegExp, string, boolean?]> = [
  [/^hf_[A-Za-z0-9]{30,}$/, 'Hugging Face token'],
  [/^[0-9a-f]{40}$/, 'W&B API key', true],
  [/^(AKIA|ASIA)[0-9A-Z]{16}$/, 'AWS access key id'],
  [/^sk-[A-Za-z0-9_-]{20,}$/, 'API secret key'],
  [/^gh[pousr]_[A-Za-z0-9]{30,}$/, 'GitHub token'],
];

const SECRET_KEY = /(^|_)(token|api_key|apikey|secret|password|secret_access_key)$/i;

// A 40-hex value is also what a git commit id looks like, and configs pin model and dataset
// revisions that way (model_revision, revision_of_model, hub_revision, GIT_SHA, …).
const REVISION_KEY = /revision|commit|(^|_)(sha|sha1|rev|hash|checksum|digest)(_|$)/i;

/** A name that holds a credential (HF_TOKEN, WANDB_API_KEY, AWS_SECRET_ACCESS_KEY, DB_PASSWORD, …). */
export function isSecretKey(key: string): boolean {
  return SECRET_KEY.test(key) || /^(AWS_ACCESS_KEY_ID|HUGGINGFACE_TOKEN|HUGGING_FACE_HUB_TOKEN|HUGGINGFACEHUB_API_TOKEN)$/.test(key);
}

// The placeholders examples ship with: hf_your_token_here, <your-key>, YOUR_API_KEY, xxx…, changeme, replace-me,
// sk-..., ****. Narrower than looksLikePlaceholder (which also says "not a token" for any value with "here" or
// "example" in it): this one claims the value was copied from an example and never filled in.
const EXAMPLE_PLACEHOLDER =
  /^(hf_)?(your|my|insert|enter|put|paste|add)[_-]?.*(token|key|secret|here|password)|^<[^>]*>$|^\[[^\]]*\]$|^\{\{[^}]*\}\}$|^(hf_|sk-|wandb_)?x{3,}$|^(hf_|sk-)?\.{3}$|^\*{3,}$|^change[_-]?me$|^replace[_-]?me$|^(todo|fixme|tbd|placeholder|dummy|redacted)$|_here$/i;

export function looksLikeExamplePlaceholder(v: string): boolean {
  const t = v.trim();
  return t !== '' && !t.includes('${') && EXAMPLE_PLACEHOLDER.test(t);
}

export function looksLikePlaceholder(v: string): boolean {
  return v === '' || /your|xxx|here|changeme|placeholder|example|dummy|<|>|\$\{|^\*+$/i.test(v);
}

/** A name for what the value looks like, or undefined when it is not a credential. */
export function tokenKind(value: string, key?: string): string | undefined {
  const v = value.trim();
  if (looksLikePlaceholder(v)) return undefined;
  const revisionKey = key !== undefined && REVISION_KEY.test(key);
  for (const [re, name, commitShaped] of TOKEN_PATTERNS) if (re.test(v) && !(commitShaped && revisionKey)) return name;
  if (key && SECRET_KEY.test(key) && v.length >= 16 && /^[A-Za-z0-9_\-+/=.]+$/.test(v)) return 'secret';
  return undefined;
}
