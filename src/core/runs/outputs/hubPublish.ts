// "Push to Hugging Face Hub": the run's adapter, or its merged model, pushed from the run's host with
// huggingface_hub (python-runner/remote_finetune/publish.py): private unless the person chose public, a model
// card written from the run's record, the token from the secret store on the runner's stdin only.
import type { RunRecord } from '../store/runRecord';
import type { OnRunHost, OpLine } from '../hosts/hostOps';
import { runHostOp, runnerOpCommand } from '../hosts/hostOps';
import { usedHardwareLabel } from '../view/runHardware';

export type PublishWhat = 'adapter' | 'merged';

export interface PublishOptions {
  readonly what: PublishWhat;
  /** "name" (the token owner's namespace) or "namespace/name". */
  readonly repo: string;
  /** Private unless this is false (an explicit choice). */
  readonly private: boolean;
  readonly token: string;
  /** The folder to push, relative to the run's workspace (default: the adapter, or <outputs.dir>/merged). */
  readonly path?: string;
  /** Non-secret environment for the runner: HF_ENDPOINT (a Hub mirror or the test's emulator), HF_HUB_DISABLE_XET. */
  readonly env?: Readonly<Record<string, string>>;
  readonly onProgress?: (line: OpLine) => void;
  readonly signal?: AbortSignal;
}

export interface PublishResult {
  readonly repo: string;
  readonly url: string;
  readonly private: boolean;
  readonly files: readonly string[];
  readonly commit?: string;
}

const NAME_PART = /^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?$/;

/** The Hub's own site: "Open on the Hub" opens pages there, or on the endpoint the push was told to use. */
export const HF_HUB_ORIGIN = 'https://huggingface.co';

/**
 * The page of a pushed repo, built here from its checked name: the host answers with a URL as well, but a host
 * can name any site, and the button promises the Hub. `endpoint` is the HF_ENDPOINT the push ran with.
 */
export function hubRepoPage(repo: string, endpoint?: string): string {
  let base = HF_HUB_ORIGIN;
  try {
    const u = endpoint ? new URL(endpoint) : undefined;
    if (u && (u.protocol === 'https:' || u.protocol === 'http:')) base = `${u.origin}${u.pathname.replace(/\/+$/, '')}`;
  } catch {
    // Not a URL: the push itself would have failed against it; the Hub's page is the one to offer.
  }
  return `${base}/${repo.split('/').map(encodeURIComponent).join('/')}`;
}

/** Why a repo name is not one the Hub takes (its rules: letters, digits, - _ . ; no -- or ..; 96 at most), or undefined. */
export function repoNameProblem(text: string): string | undefined {
  const parts = text.trim().split('/');
  if (parts.length > 2) return 'Use "name" or "namespace/name".';
  for (const p of parts) {
    if (!NAME_PART.test(p)) return `"${p}" may hold only letters, digits, "-", "_" and ".", must start and end with a letter or digit, 96 characters at most.`;
    if (p.includes('--') || p.includes('..')) return `"${p}" may not contain "--" or "..".`;
  }
  return undefined;
}

/** A name from the run's: "<run name>-lora" or "<run name>-merged", cut to what the Hub takes. */
export function defaultRepoName(record: Pick<RunRecord, 'name' | 'id'>, what: PublishWhat): string {
  const slug =
    record.name
      .toLowerCase()
      .replace(/[^a-z0-9._-]+/g, '-')
      .replace(/([-._])[-._]+/g, '$1')
      .replace(/^[-._]+|[-._]+$/g, '')
      .slice(0, 80)
      .replace(/[-._]+$/, '') || `run-${record.id.slice(0, 12).toLowerCase()}`;
  return `${slug}-${what === 'adapter' ? 'lora' : 'merged'}`;
}

/** What only the extension knows about the run, for the model card (nothing secret, no local paths). */
export function cardFacts(record: RunRecord): Record<string, unknown> {
  const ms = record.finishedAt ? Date.parse(record.finishedAt) - Date.parse(record.createdAt) : NaN;
  return {
    run_name: record.name,
    // The hardware the run had (runHardware.ts), with the spec's ask beside it when they differ.
    ...(usedHardwareLabel(record) ? { gpu: usedHardwareLabel(record) } : {}),
    ...(Number.isFinite(ms) && ms > 0 ? { duration_s: Math.round(ms / 1000) } : {}),
  };
}

export async function publishToHub(onRunHost: OnRunHost, record: RunRecord, opts: PublishOptions): Promise<PublishResult> {
  const problem = repoNameProblem(opts.repo);
  if (problem) throw new Error(problem);
  if (!opts.token) throw new Error('no Hugging Face token: set one with "Fine-Tune: Set Hugging Face Token"');
  return onRunHost(
    record.id,
    async (session, at) => {
      const argv = ['publish', '--run-dir', at.runDir, '--workdir', at.workspace, '--what', opts.what, '--repo', opts.repo.trim()];
      if (!opts.private) argv.push('--public');
      if (opts.path) argv.push('--path', opts.path);
      const stdin = JSON.stringify({ token: opts.token, facts: cardFacts(record) });
      const done = await runHostOp(session, runnerOpCommand(at, argv, opts.env), stdin, (l) => opts.onProgress?.(l), opts.signal, {
        what: `pushing run ${record.id} to the Hugging Face Hub`,
      });
      // The host names the repo with its namespace ("alice/name"); taken only when it is a repo name at all.
      const repo = typeof done.repo === 'string' && repoNameProblem(done.repo) === undefined ? done.repo.trim() : opts.repo.trim();
      return {
        repo,
        url: hubRepoPage(repo, opts.env?.HF_ENDPOINT),
        private: done.private === true,
        files: Array.isArray(done.files) ? done.files.filter((f): f is string => typeof f === 'string') : [],
        ...(typeof done.commit === 'string' ? { commit: done.commit } : {}),
      };
    },
    opts.signal,
  );
}
