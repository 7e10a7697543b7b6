// Test double for the Hugging Face Hub's upload API (the Hub cannot be reached here), for huggingface_hub's
// HfApi pointed at it with HF_ENDPOINT. It answers what huggingface_hub 0.36 and 2.x send on the way to a
// commit (read from their hf_api.py, _commit_api.py and lfs.py): GET /api/whoami-v2, POST /api/repos/create
// (`private: true` from 0.x, `visibility: "private"` from 2.x), GET /api/models/{repo}[/revision/{rev}],
// POST /api/validate-yaml (a README.md is checked before anything uploads), POST
// /api/models/{repo}/preupload/{rev}, the Git LFS batch API at /{repo}.git/info/lfs/objects/batch (basic
// transfer: an upload href and a verify href per object, no actions for an object already stored), the PUT
// to the upload href, POST .../objects/verify, and POST /api/models/{repo}/commit/{rev} with NDJSON lines
// (header, file, lfsFile, deletedFile).
// What the real Hub does that a kind double would not, kept here: a bad token is 401 with the Hub's error JSON
// and X-Error-Message "Invalid credentials in Authorization header"; a repo that exists is 409 (the client's
// exist_ok must cope); another user's namespace is 403; a private repo is 404 RepoNotFound to anyone else;
// a new repo starts with the Hub's .gitattributes, and a file it marks as LFS, any file of 10 MB or more, or a
// binary file sent inline in the commit is refused (such files must go through LFS); an lfsFile whose object
// was never uploaded is refused; an uploaded object whose sha256 or size does not match its oid is refused.
// Not emulated: the Xet storage protocol (clients here run with HF_HUB_DISABLE_XET=1 and use LFS, which the
// Hub still accepts), multipart LFS, pull requests, branches other than main.
import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { parse as parseYaml } from 'yaml';

export interface HubFile {
  readonly content: Buffer;
  /** Stored through LFS (the commit named it by sha256), not inline. */
  readonly lfs: boolean;
}

export interface HubRepo {
  readonly id: string;
  readonly private: boolean;
  readonly files: Map<string, HubFile>;
  readonly commits: Array<{ readonly oid: string; readonly summary: string; readonly paths: readonly string[] }>;
  sha: string;
}

/** The Hub's default .gitattributes for a new model repo (the LFS patterns), abridged. */
const DEFAULT_GITATTRIBUTES = [
  '*.7z',
  '*.arrow',
  '*.bin',
  '*.bz2',
  '*.ckpt',
  '*.gz',
  '*.h5',
  '*.model',
  '*.msgpack',
  '*.npy',
  '*.npz',
  '*.onnx',
  '*.ot',
  '*.parquet',
  '*.pb',
  '*.pickle',
  '*.pkl',
  '*.pt',
  '*.pth',
  '*.safetensors',
  '*.tar',
  '*.tflite',
  '*.zip',
  '*.zst',
  '*tfevents*',
]
  .map((p) => `${p} filter=lfs diff=lfs merge=lfs -text`)
  .join('\n');

/** Files this size or larger must go through LFS (the Hub's documented 10 MB limit for regular files). */
export const LFS_THRESHOLD = 10 * 1024 * 1024;
const KNOWN_LICENSES = new Set([
  'apache-2.0',
  'mit',
  'llama3',
  'llama3.1',
  'llama3.2',
  'gemma',
  'cc-by-4.0',
  'cc-by-nc-4.0',
  'openrail',
  'other',
  'bsd-3-clause',
]);
const REPO_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,95}\/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$/;

function globToRegExp(glob: string): RegExp {
  return new RegExp(`^${glob.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`);
}

function gitBlobSha1(content: Buffer): string {
  return createHash('sha1').update(`blob ${content.length}\0`).update(content).digest('hex');
}

export class HfHubEmulator {
  /** token → user name. */
  readonly tokens = new Map<string, string>();
  readonly repos = new Map<string, HubRepo>();
  /** LFS objects by sha256, uploaded but maybe not yet committed. */
  readonly objects = new Map<string, Buffer>();
  /** "METHOD path" per request, in order. */
  readonly calls: string[] = [];
  /** Every Authorization header value seen (the test checks no other token reached the Hub). */
  readonly authSeen = new Set<string>();
  /** Repo creations answered 409 (the repo existed). */
  conflicts = 0;
  private server: Server | undefined;
  private readonly uploadSecret = randomBytes(8).toString('hex');
  port = 0;

  constructor(users: Readonly<Record<string, string>> = {}) {
    for (const [token, user] of Object.entries(users)) this.tokens.set(token, user);
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** A repo made outside the test's client (someone's existing repo). */
  addRepo(id: string, priv: boolean): HubRepo {
    const repo: HubRepo = {
      id,
      private: priv,
      files: new Map([['.gitattributes', { content: Buffer.from(DEFAULT_GITATTRIBUTES + '\n'), lfs: false }]]),
      commits: [],
      sha: randomBytes(20).toString('hex'),
    };
    this.repos.set(id, repo);
    return repo;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        try {
          this.handle(req, Buffer.concat(chunks), res);
        } catch (err) {
          send(res, 500, { error: String(err) });
        }
      });
    });
    this.server.keepAliveTimeout = 1;
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    const addr = this.server.address();
    this.port = typeof addr === 'object' && addr ? addr.port : 0;
    return this;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }

  /** The user a request authenticates as: a string, null for no token, or 'bad' for a token the Hub does not know. */
  private userOf(req: IncomingMessage): string | null | 'bad' {
    const h = req.headers.authorization;
    if (!h) return null;
    this.authSeen.add(h);
    const m = /^Bearer (.+)$/.exec(h);
    const user = m ? this.tokens.get(m[1]!) : undefined;
    return user ?? 'bad';
  }

  private isLfsPath(repo: HubRepo, path: string): boolean {
    const attrs = repo.files.get('.gitattributes')?.content.toString('utf8') ?? '';
    return attrs
      .split('\n')
      .filter((l) => /filter=lfs/.test(l))
      .map((l) => l.split(/\s+/)[0]!)
      .some((glob) => globToRegExp(glob).test(path) || globToRegExp(glob).test(path.split('/').pop()!));
  }

  private mustBeLfs(repo: HubRepo, path: string, size: number, sample: Buffer): boolean {
    return this.isLfsPath(repo, path) || size >= LFS_THRESHOLD || sample.includes(0);
  }

  private handle(req: IncomingMessage, body: Buffer, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', this.url);
    const path = decodeURIComponent(url.pathname);
    const method = req.method ?? 'GET';
    this.calls.push(`${method} ${path}`);

    // The LFS upload href stands for a presigned storage URL: no Authorization, a signature in the query.
    const put = /^\/lfs-upload\/([0-9a-f]{64})$/.exec(path);
    if (put && method === 'PUT') {
      if (url.searchParams.get('sig') !== this.sig(put[1]!)) return send(res, 403, { error: 'SignatureDoesNotMatch' });
      const oid = put[1]!;
      const size = Number(url.searchParams.get('size'));
      if (createHash('sha256').update(body).digest('hex') !== oid || body.length !== size)
        return send(res, 400, { error: 'The uploaded content does not match its sha256 oid or size' });
      this.objects.set(oid, body);
      res.writeHead(200, { etag: `"${createHash('md5').update(body).digest('hex')}"` });
      return void res.end();
    }

    const user = this.userOf(req);
    if (user === 'bad') {
      // The Hub's answer to an unknown or revoked token, on every endpoint.
      res.writeHead(401, { 'content-type': 'application/json', 'x-error-message': 'Invalid credentials in Authorization header' });
      return void res.end(JSON.stringify({ error: 'Invalid credentials in Authorization header' }));
    }

    if (method === 'GET' && path === '/api/whoami-v2') {
      if (!user) return send(res, 401, { error: 'Invalid username or password.' });
      return send(res, 200, {
        type: 'user',
        id: createHash('sha1').update(user).digest('hex').slice(0, 24),
        name: user,
        fullname: user,
        orgs: [],
        auth: { type: 'access_token', accessToken: { displayName: 'test', role: 'write' } },
      });
    }

    if (method === 'POST' && path === '/api/repos/create') {
      if (!user) return send(res, 401, { error: 'Invalid username or password.' });
      const p = JSON.parse(body.toString('utf8') || '{}') as {
        name?: string;
        organization?: string | null;
        type?: string;
        private?: boolean;
        visibility?: string;
      };
      const ns = p.organization ?? user;
      const id = `${ns}/${p.name ?? ''}`;
      if ((p.type ?? 'model') !== 'model') return send(res, 400, { error: 'only model repos in this emulator' });
      if (!REPO_ID.test(id)) return send(res, 400, { error: `Invalid repo name: ${id}` });
      if (ns !== user) return send(res, 403, { error: `You don't have the rights to create a model under the namespace "${ns}"` });
      if (this.repos.has(id) && ++this.conflicts) return send(res, 409, { error: 'You already created this model repo', url: `${this.url}/${id}` });
      const priv = p.private === true || p.visibility === 'private';
      this.addRepo(id, priv);
      return send(res, 200, { url: `${this.url}/${id}`, name: id, id: randomBytes(12).toString('hex') });
    }

    if (method === 'POST' && path === '/api/validate-yaml') {
      const p = JSON.parse(body.toString('utf8')) as { content?: string };
      return this.validateYaml(p.content ?? '', res);
    }

    let m = /^\/api\/models\/([^/]+\/[^/]+?)(?:\/revision\/([^/]+))?$/.exec(path);
    if (m && method === 'GET') {
      const repo = this.visible(m[1]!, user, res);
      if (!repo) return;
      if (m[2] && m[2] !== 'main' && m[2] !== repo.sha) {
        res.writeHead(404, { 'content-type': 'application/json', 'x-error-code': 'RevisionNotFound' });
        return void res.end(JSON.stringify({ error: `Invalid rev id: ${m[2]}` }));
      }
      return send(res, 200, {
        _id: repo.id,
        id: repo.id,
        modelId: repo.id,
        private: repo.private,
        sha: repo.sha,
        disabled: false,
        gated: false,
        downloads: 0,
        likes: 0,
        tags: [],
        lastModified: new Date().toISOString(),
        createdAt: new Date().toISOString(),
        siblings: [...repo.files.keys()].map((rfilename) => ({ rfilename })),
      });
    }

    m = /^\/api\/models\/([^/]+\/[^/]+)\/preupload\/([^/]+)$/.exec(path);
    if (m && method === 'POST') {
      const repo = this.writable(m[1]!, user, res);
      if (!repo) return;
      const p = JSON.parse(body.toString('utf8')) as { files: Array<{ path: string; sample: string; size: number }> };
      return send(res, 200, {
        files: p.files.map((f) => {
          const lfs = this.mustBeLfs(repo, f.path, f.size, Buffer.from(f.sample, 'base64'));
          const existing = repo.files.get(f.path);
          const oid = existing ? (existing.lfs ? createHash('sha256').update(existing.content).digest('hex') : gitBlobSha1(existing.content)) : null;
          return { path: f.path, uploadMode: lfs ? 'lfs' : 'regular', shouldIgnore: false, oid };
        }),
        commitOid: repo.sha,
      });
    }

    m = /^\/([^/]+\/[^/]+)\.git\/info\/lfs\/objects\/(batch|verify)$/.exec(path);
    if (m && method === 'POST') {
      const repo = this.writable(m[1]!, user, res);
      if (!repo) return;
      if (m[2] === 'verify') {
        const v = JSON.parse(body.toString('utf8')) as { oid: string; size: number };
        const obj = this.objects.get(v.oid);
        if (!obj || obj.length !== v.size) return send(res, 404, { message: 'Object not found' });
        return send(res, 200, { success: true });
      }
      const p = JSON.parse(body.toString('utf8')) as { operation: string; transfers?: string[]; objects: Array<{ oid: string; size: number }> };
      if (p.operation !== 'upload') return send(res, 422, { message: 'only upload in this emulator' });
      return send(
        res,
        200,
        {
          transfer: 'basic',
          objects: p.objects.map((o) =>
            this.objects.has(o.oid)
              ? { oid: o.oid, size: o.size }
              : {
                  oid: o.oid,
                  size: o.size,
                  authenticated: true,
                  actions: {
                    upload: { href: `${this.url}/lfs-upload/${o.oid}?size=${o.size}&sig=${this.sig(o.oid)}`, header: {}, expires_in: 86400 },
                    verify: { href: `${this.url}/${repo.id}.git/info/lfs/objects/verify`, header: {} },
                  },
                },
          ),
        },
        'application/vnd.git-lfs+json',
      );
    }

    m = /^\/api\/models\/([^/]+\/[^/]+)\/commit\/([^/]+)$/.exec(path);
    if (m && method === 'POST') {
      const repo = this.writable(m[1]!, user, res);
      if (!repo) return;
      return this.commit(repo, body.toString('utf8'), res);
    }

    send(res, 404, { error: `no route ${method} ${path}` });
  }

  private sig(oid: string): string {
    return createHash('sha256').update(`${this.uploadSecret}:${oid}`).digest('hex').slice(0, 16);
  }

  /** A repo the caller may read: a private repo is "not found" to anyone but its owner, as on the Hub. */
  private visible(id: string, user: string | null, res: ServerResponse): HubRepo | undefined {
    const repo = this.repos.get(id);
    if (!repo || (repo.private && id.split('/')[0] !== user)) {
      res.writeHead(user ? 404 : 401, { 'content-type': 'application/json', 'x-error-code': 'RepoNotFound' });
      res.end(JSON.stringify({ error: 'Repository not found' }));
      return undefined;
    }
    return repo;
  }

  private writable(id: string, user: string | null, res: ServerResponse): HubRepo | undefined {
    if (!user) {
      send(res, 401, { error: 'Invalid username or password.' });
      return undefined;
    }
    const repo = this.visible(id, user, res);
    if (repo && id.split('/')[0] !== user) {
      send(res, 403, { error: `You don't have the rights to write to ${id}` });
      return undefined;
    }
    return repo;
  }

  private validateYaml(content: string, res: ServerResponse): void {
    const fm = /^---\r?\n([\s\S]*?)\r?\n---/.exec(content);
    if (!fm) return send(res, 200, { errors: [], warnings: [{ message: 'empty or missing yaml metadata in repo card' }] });
    let meta: Record<string, unknown>;
    try {
      meta = (parseYaml(fm[1]!) ?? {}) as Record<string, unknown>;
    } catch (err) {
      return send(res, 400, { errors: [{ message: `YAML parse error: ${(err as Error).message}` }] });
    }
    const errors: Array<{ message: string }> = [];
    if (meta.base_model !== undefined && !(typeof meta.base_model === 'string' && REPO_ID.test(meta.base_model)))
      errors.push({ message: '"base_model" with value ' + JSON.stringify(meta.base_model) + ' is not a valid model id' });
    if (meta.license !== undefined && !(typeof meta.license === 'string' && KNOWN_LICENSES.has(meta.license)))
      errors.push({ message: `"license" must be one of the Hub's license ids` });
    if (meta.tags !== undefined && !(Array.isArray(meta.tags) && meta.tags.every((t) => typeof t === 'string')))
      errors.push({ message: '"tags" must be an array of strings' });
    if (errors.length) return send(res, 400, { errors });
    send(res, 200, { errors: [], warnings: [] });
  }

  private commit(repo: HubRepo, ndjson: string, res: ServerResponse): void {
    const lines = ndjson
      .split('\n')
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l) as { key: string; value: Record<string, unknown> });
    if (lines[0]?.key !== 'header') return send(res, 400, { error: 'The first line must be the commit header' });
    const header = lines[0].value as { summary?: string; parentCommit?: string };
    if (header.parentCommit && header.parentCommit !== repo.sha) return send(res, 412, { error: 'A commit has happened since. Please refresh and try again.' });
    const staged = new Map(repo.files);
    const paths: string[] = [];
    for (const { key, value } of lines.slice(1)) {
      const p = String(value.path ?? '');
      if (!p || p.startsWith('/') || p.split('/').includes('..')) return send(res, 400, { error: `Invalid path: ${p}` });
      if (key === 'file') {
        const content = Buffer.from(String(value.content ?? ''), value.encoding === 'base64' ? 'base64' : 'utf8');
        if (this.mustBeLfs(repo, p, content.length, content.subarray(0, 512)))
          return send(res, 400, {
            error: `Your push was rejected because it contains files larger than 10 MiB or binary files (${p}). Please use https://huggingface.co/docs/hub/repositories-getting-started#terminal to store large files.`,
          });
        staged.set(p, { content, lfs: false });
      } else if (key === 'lfsFile') {
        const obj = this.objects.get(String(value.oid));
        if (!obj || (value.size !== undefined && obj.length !== value.size))
          return send(res, 400, { error: `Your push was rejected because an LFS pointer pointed to a file that does not exist (${p})` });
        staged.set(p, { content: obj, lfs: true });
      } else if (key === 'deletedFile') {
        staged.delete(p);
      } else {
        return send(res, 400, { error: `Unsupported operation in this emulator: ${key}` });
      }
      paths.push(p);
    }
    repo.files.clear();
    for (const [k, v] of staged) repo.files.set(k, v);
    repo.sha = randomBytes(20).toString('hex');
    repo.commits.push({ oid: repo.sha, summary: header.summary ?? '', paths });
    send(res, 200, { success: true, commitOid: repo.sha, commitUrl: `${this.url}/${repo.id}/commit/${repo.sha}`, hookOutput: '' });
  }
}

function send(res: ServerResponse, status: number, payload: unknown, contentType = 'application/json'): void {
  const text = JSON.stringify(payload);
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
