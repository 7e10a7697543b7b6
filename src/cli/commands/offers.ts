// `remote-finetune offers --gpu <type> [--hours N] [--spot|--on-demand] [--region R] [--zone Z] [--format text|json]`:
// every configured cloud's offers for a GPU, launchable and cheapest first, with what a run would cost. The
// clouds are chosen by the same core policy as the extension's "Show Cloud GPU Offers"; settings come from
// flags and the environment (LAMBDA_API_KEY, AWS_REGION, GOOGLE_CLOUD_PROJECT, Application Default
// Credentials). Only reads. Exit 0 with offers, 1 with none, 2 on bad usage.
import type { CliCommand, CliIo } from '../command';
import { estimateRunCost } from '../../core/providers/cost';
import { offerLabel } from '../../core/providers/offerLabel';
import { lazyApplicationDefaultCredentials } from '../../core/providers/gcp/auth';
import { CLOUD_LABELS, createProviderSelection, resolveCloudSettings } from '../../core/providers/providerSelection';
import type { SetupHints } from '../../core/providers/providerSelection';
import type { TargetSpec } from '../../core/providers/targetSpec';
import { offersForTarget } from '../../core/runs/hosts/targetOffers';

const USAGE =
  'usage: remote-finetune offers --gpu <type> [--hours N] [--spot|--on-demand] [--count N] [--provider lambda|ec2|gcp]\n' +
  '                               [--region R] [--zone Z] [--project P] [--lambda-api-url URL] [--format text|json]\n' +
  '  Lists cloud GPU offers, launchable and cheapest first, with the cost of --hours of training (default 2).\n' +
  '  Lambda Cloud needs LAMBDA_API_KEY in the environment (never a flag: command lines are seen by other users\n' +
  "  and kept in shell history); EC2 a region (--region or AWS_REGION) and the AWS SDK's credentials; GCP a\n" +
  '  project (--project or GOOGLE_CLOUD_PROJECT) and Application Default Credentials.\n' +
  '  Exit 0 when offers were found, 1 when none, 2 on bad usage.\n';

const CLI_HINTS: SetupHints = {
  lambda: 'set LAMBDA_API_KEY',
  ec2: 'pass --region or set AWS_REGION',
  gcp: '--project (or GOOGLE_CLOUD_PROJECT) and Application Default Credentials',
};

interface OffersArgs {
  gpu: string;
  hours: number;
  format: 'text' | 'json';
  target: Partial<TargetSpec>;
  cloud?: keyof typeof CLOUD_LABELS;
  project?: string;
  lambdaApiUrl?: string;
}

function parse(args: readonly string[], io: CliIo): OffersArgs | number {
  let gpu: string | undefined;
  let hours = 2;
  let format: 'text' | 'json' = 'text';
  let project: string | undefined;
  let lambdaApiUrl: string | undefined;
  let cloud: keyof typeof CLOUD_LABELS | undefined;
  const target: { -readonly [K in keyof TargetSpec]?: TargetSpec[K] } = {};
  const bad = (why: string): number => {
    io.stderr(`remote-finetune: ${why}\n${USAGE}`);
    return 2;
  };
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const eq = a.indexOf('=');
    const name = a.startsWith('--') && eq !== -1 ? a.slice(0, eq) : a;
    const inline = a.startsWith('--') && eq !== -1 ? a.slice(eq + 1) : undefined;
    const value = (): string => inline ?? args[++i] ?? '';
    switch (name) {
      case '--gpu':
        gpu = value() || undefined;
        break;
      case '--hours':
        hours = Number(value());
        if (!(hours > 0)) return bad('--hours takes a positive number');
        break;
      case '--count': {
        const n = Number(value());
        if (!Number.isInteger(n) || n < 1) return bad('--count takes a whole number of GPUs');
        target.gpu_count = n;
        break;
      }
      case '--spot':
        target.spot = true;
        break;
      case '--on-demand':
        target.spot = false;
        break;
      case '--provider': {
        const p = value();
        if (p !== 'lambda' && p !== 'ec2' && p !== 'gcp') return bad('--provider takes lambda, ec2 or gcp');
        target.provider = cloud = p;
        break;
      }
      case '--region':
        target.region = value() || undefined;
        break;
      case '--zone':
        target.zone = value() || undefined;
        break;
      case '--project':
        project = value() || undefined;
        break;
      case '--lambda-api-url':
        lambdaApiUrl = value() || undefined;
        break;
      case '--format': {
        const v = value();
        if (v !== 'text' && v !== 'json') return bad('--format takes text or json');
        format = v;
        break;
      }
      case '--help':
      case '-h':
        io.stdout(USAGE);
        return 0;
      default:
        return bad(a.startsWith('-') ? `unknown option '${a}'` : `unexpected argument '${a}'`);
    }
  }
  if (!gpu) return bad('offers needs --gpu (for example --gpu A100)');
  return { gpu, hours, format, target, cloud, project, lambdaApiUrl };
}

export const offersCommand: CliCommand = {
  name: 'offers',
  summary: 'list cloud GPU offers, cheapest launchable first, with run costs',
  usage: USAGE,
  async run(args, io) {
    const parsed = parse(args, io);
    if (typeof parsed === 'number') return parsed;
    const env = io.env ?? process.env;
    const settings = resolveCloudSettings(
      {
        lambdaApiKey: env.LAMBDA_API_KEY,
        lambdaApiUrl: parsed.lambdaApiUrl,
        // Without a named provider, --region is EC2's and --zone GCP's, as a run spec's target reads them.
        awsRegion: parsed.target.provider === undefined || parsed.target.provider === 'ec2' ? parsed.target.region : undefined,
        gcpProject: parsed.project,
        gcpZone: parsed.target.provider === undefined || parsed.target.provider === 'gcp' ? parsed.target.zone : undefined,
      },
      env,
    );
    const selection = createProviderSelection(lazyApplicationDefaultCredentials(env), undefined, CLI_HINTS);
    const found = selection.offerProviders(settings, parsed.target);
    const cloud = parsed.cloud;
    // With --provider, only that cloud is asked, and only its missing setup is worth saying.
    const providers = found.providers.filter((p) => !cloud || p.kind === cloud);
    const setup = found.problems.filter((p) => !cloud || p.startsWith(`${CLOUD_LABELS[cloud]}:`));
    const { offers, problems } =
      providers.length > 0 ? await offersForTarget(providers, [parsed.gpu], parsed.target, AbortSignal.timeout(60_000)) : { offers: [], problems: [] };
    const notes = [...setup, ...problems];
    for (const n of notes) io.stderr(`remote-finetune: ${n}\n`);
    const rows = offers.map(({ offer: o }) => ({ offer: o, cost: estimateRunCost(o, parsed.hours) }));
    if (parsed.format === 'json') {
      io.stdout(
        `${JSON.stringify(
          rows.map(({ offer: o, cost }) => ({
            provider: o.provider,
            instanceType: o.instanceType,
            gpu: o.gpu,
            gpuCount: o.gpuCount,
            vramGiB: o.vramGiB,
            region: o.region,
            zone: o.zone,
            spot: o.spot,
            capacity: o.capacity,
            pricePerHour: o.pricePerHour,
            runUsd: Math.round(cost.totalUsd * 100) / 100,
            runBasis: cost.basis,
          })),
        )}\n`,
      );
    } else if (rows.length > 0) {
      // The words of the editor's offer picker, one offer a line.
      const labels = rows.map(({ offer }) => offerLabel(offer, parsed.hours));
      const w = Math.max(...labels.map((l) => l.label.length));
      io.stdout(labels.map((l) => `${l.label.padEnd(w)}  ${l.description}  ${l.detail}`).join('\n') + '\n');
    } else {
      io.stdout(`no ${parsed.gpu} offers\n`);
    }
    return rows.length > 0 ? 0 : 1;
  },
};
