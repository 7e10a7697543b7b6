// Test double for the AWS Price List API's GetProducts (AWS cannot be reached here), checked against the service
// model botocore ships (botocore/data/pricing/2017-10-15/service-2.json, from moto's cached venv): the JSON 1.1
// protocol's X-Amz-Target and content type, a SigV4 signature scoped to the `pricing` signing name, every body
// member one the model's GetProductsRequest declares, its required members present, each Filter's Type one of
// the model's FilterType values and MaxResults within GetProductsMaxResults. A request the real service would
// refuse is answered 400 with what is wrong, so a client bug cannot pass as a price.
// Answers PriceList entries in the Price List's shape (product.attributes, terms.OnDemand...pricePerUnit.USD) for
// the prices it is given, one product per page so the client must follow NextToken.
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';

interface Shape {
  readonly type: string;
  readonly required?: readonly string[];
  readonly members?: Record<string, { readonly shape: string }>;
  readonly member?: { readonly shape: string };
  readonly enum?: readonly string[];
  readonly min?: number;
  readonly max?: number;
}

export interface PricingModel {
  readonly metadata: { readonly targetPrefix: string; readonly signingName: string; readonly jsonVersion: string };
  readonly shapes: Record<string, Shape>;
}

/** botocore's Price List model from moto's venv (scripts/ensure-moto.sh installs it), or why it is not there. */
export function botocorePricingModel(): PricingModel | { readonly missing: string } {
  try {
    const venv = execFileSync('bash', [join(__dirname, '..', '..', 'scripts', 'ensure-moto.sh')], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 600_000,
    }).trim();
    const lib = join(venv, 'lib');
    const py = readdirSync(lib).find((d) => d.startsWith('python'));
    const dir = join(lib, py ?? '', 'site-packages', 'botocore', 'data', 'pricing');
    const version = readdirSync(dir).sort().at(-1) ?? '';
    const file = readdirSync(join(dir, version)).find((f) => f.startsWith('service-2.json'));
    const raw = readFileSync(join(dir, version, file ?? 'service-2.json'));
    return JSON.parse((file?.endsWith('.gz') ? gunzipSync(raw) : raw).toString('utf8')) as PricingModel;
  } catch (err) {
    return { missing: `botocore's pricing model could not be read from moto's venv: ${(err as Error).message.split('\n')[0]}` };
  }
}

export class AwsPricingEmulator {
  /** USD per hour by `${regionCode}/${instanceType}`. */
  readonly prices = new Map<string, number>();
  /** GetProducts requests accepted. */
  requests = 0;
  /** Requests the model refused, with why. */
  readonly refused: string[] = [];
  /** Answer every request with this error (e.g. AccessDeniedException) while set. */
  failWith?: { readonly status: number; readonly type: string };
  private server?: Server;
  port = 0;

  constructor(private readonly model: PricingModel) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    const a = this.server.address();
    this.port = typeof a === 'object' && a ? a.port : 0;
    return this;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  /** What the model says is wrong with a value of `shapeName`, or nothing. */
  private check(shapeName: string, value: unknown, path: string): string[] {
    const shape = this.model.shapes[shapeName];
    if (!shape) return [`${path}: unknown shape ${shapeName}`];
    const out: string[] = [];
    if (shape.type === 'structure') {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) return [`${path}: not an object`];
      const v = value as Record<string, unknown>;
      for (const r of shape.required ?? []) if (v[r] === undefined) out.push(`${path}.${r}: required`);
      for (const [k, x] of Object.entries(v)) {
        const m = shape.members?.[k];
        if (!m) out.push(`${path}.${k}: not a member of ${shapeName}`);
        else out.push(...this.check(m.shape, x, `${path}.${k}`));
      }
    } else if (shape.type === 'list') {
      if (!Array.isArray(value)) return [`${path}: not a list`];
      value.forEach((x, i) => out.push(...this.check(shape.member!.shape, x, `${path}[${i}]`)));
    } else if (shape.type === 'string') {
      if (typeof value !== 'string') out.push(`${path}: not a string`);
      else if (shape.enum && !shape.enum.includes(value)) out.push(`${path}: ${value} is not one of ${shape.enum.join(', ')}`);
    } else if (shape.type === 'integer') {
      if (typeof value !== 'number' || !Number.isInteger(value)) out.push(`${path}: not an integer`);
      else if ((shape.min !== undefined && value < shape.min) || (shape.max !== undefined && value > shape.max)) out.push(`${path}: ${value} out of range`);
    }
    return out;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let body = '';
    for await (const c of req) body += String(c);
    const reply = (status: number, payload: unknown): void => {
      res.writeHead(status, { 'content-type': `application/x-amz-json-${this.model.metadata.jsonVersion}` });
      res.end(JSON.stringify(payload));
    };
    const refuse = (why: string): void => {
      this.refused.push(why);
      reply(400, { __type: 'ValidationException', message: why });
    };
    const target = String(req.headers['x-amz-target'] ?? '');
    if (target !== `${this.model.metadata.targetPrefix}.GetProducts`) return refuse(`X-Amz-Target ${target}`);
    if (!String(req.headers['content-type'] ?? '').startsWith(`application/x-amz-json-${this.model.metadata.jsonVersion}`))
      return refuse(`content-type ${String(req.headers['content-type'])}`);
    const auth = String(req.headers.authorization ?? '');
    if (!new RegExp(`^AWS4-HMAC-SHA256 Credential=[^/]+/\\d{8}/us-east-1/${this.model.metadata.signingName}/aws4_request`).test(auth))
      return refuse(`not SigV4-signed for ${this.model.metadata.signingName} in us-east-1: ${auth.slice(0, 80)}`);
    let input: Record<string, unknown>;
    try {
      input = JSON.parse(body) as Record<string, unknown>;
    } catch {
      return refuse('body is not JSON');
    }
    const problems = this.check('GetProductsRequest', input, 'GetProductsRequest');
    if (problems.length) return refuse(problems.join('; '));
    if (this.failWith) return reply(this.failWith.status, { __type: this.failWith.type, message: 'injected' });
    this.requests++;
    const filters = new Map(((input.Filters as Array<{ Field: string; Value: string }>) ?? []).map((f) => [f.Field, f.Value]));
    const matches = [...this.prices.entries()]
      .filter(([k]) => k === `${filters.get('regionCode') ?? ''}/${filters.get('instanceType') ?? ''}`)
      .map(([k, usd]) => {
        const [regionCode, instanceType] = k.split('/');
        const sku = `SKU${Buffer.from(k).toString('hex').slice(0, 12).toUpperCase()}`;
        return JSON.stringify({
          product: { productFamily: 'Compute Instance', attributes: { instanceType, regionCode, operatingSystem: 'Linux', tenancy: 'Shared' }, sku },
          serviceCode: 'AmazonEC2',
          terms: {
            OnDemand: {
              [`${sku}.JRTCKXETXF`]: {
                offerTermCode: 'JRTCKXETXF',
                sku,
                effectiveDate: '2026-11-01T00:00:00Z',
                priceDimensions: {
                  [`${sku}.JRTCKXETXF.6YS6EN2CT7`]: {
                    unit: 'Hrs',
                    pricePerUnit: { USD: usd.toFixed(10) },
                    description: `$${usd} per On Demand Linux ${instanceType} Instance Hour`,
                  },
                },
              },
            },
          },
          version: '20261101000000',
          publicationDate: '2026-11-01T00:00:00Z',
        });
      });
    // A first page with no match and a token: the client must follow it.
    const page = input.NextToken === 'p2' ? matches : [];
    reply(200, { FormatVersion: 'aws_v1', PriceList: page, ...(input.NextToken === 'p2' ? {} : { NextToken: 'p2' }) });
  }
}
