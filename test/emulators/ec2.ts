// Test double for the EC2 Query API (the cloud cannot exist here): form-encoded Action=… requests in,
// XML out in EC2's documented shapes (lowerCamel element names, lists as <item>, errors as
// <Response><Errors><Error><Code>…), read by the real @aws-sdk/client-ec2 with an endpoint override.
// Eventual consistency as AWS documents it (docs.aws.amazon.com/ec2/latest/devguide/eventual-consistency.html):
// for `consistencyMs` after RunInstances, CreateSecurityGroup and ImportKeyPair, the new id is unknown to the
// other calls (InvalidInstanceID.NotFound from DescribeInstances and TerminateInstances, which then has NOT
// terminated anything; InvalidGroup.NotFound from AuthorizeSecurityGroupIngress and RunInstances;
// InvalidKeyPair.NotFound from RunInstances and DescribeKeyPairs) and missing from filtered listings.
// `slow.listLagSec` sets that window in seconds. A ClientToken reused with other parameters is refused
// (IdempotentParameterMismatch), and zones in noCapacityIn refuse every launch (InsufficientInstanceCapacity).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import { EmulatorBase, send } from './server';
import { SsmParameters } from './ssm';
import { Ec2Networks } from './ec2Network';
import { Ec2SpotRequests } from './ec2SpotRequests';
import type { EmulatedInstance, EmulatorOptions, Fault } from './server';

const NS = 'http://ec2.amazonaws.com/doc/2016-11-15/';
const STATE_CODE: Record<string, number> = { pending: 0, running: 16, terminating: 32, terminated: 48, stopping: 64, stopped: 80 };
const STATE_NAME: Record<string, string> = {
  pending: 'pending',
  running: 'running',
  terminating: 'shutting-down',
  terminated: 'terminated',
  stopping: 'stopping',
  stopped: 'stopped',
};

/** Image ids in EC2's format (ami- and 17 hex digits): clients check it. */
export const AMI = { pt25old: 'ami-0a25000000000a001', pt27: 'ami-0a27000000000a002', pt25: 'ami-0a25000000000a003', ubuntu: 'ami-0b22000000000b004' } as const;

export const EC2_EMULATED_TYPES = ['g4dn.xlarge', 'g4dn.12xlarge', 'g5.xlarge', 'g5.12xlarge', 'g6.xlarge', 'p3.2xlarge', 'p4d.24xlarge', 'p5.48xlarge'];

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

type Params = Map<string, string>;

/** Values of Prefix.1, Prefix.2, … */
function list(p: Params, prefix: string): string[] {
  const out: string[] = [];
  for (let n = 1; p.has(`${prefix}.${n}`); n++) out.push(p.get(`${prefix}.${n}`)!);
  return out;
}

function filters(p: Params): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (let n = 1; p.has(`Filter.${n}.Name`); n++) out.set(p.get(`Filter.${n}.Name`)!, list(p, `Filter.${n}.Value`));
  return out;
}

function glob(pattern: string, s: string): boolean {
  const re = new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
  );
  return re.test(s);
}

interface KeyPair {
  name: string;
  id: string;
  material: string;
  visibleAt: number;
}
/** vpcId absent: the default VPC (groups made by tests before networks were modelled). */
interface Group {
  id: string;
  name: string;
  description: string;
  cidrs: Array<{ proto: string; from: number; to: number; cidr: string }>;
  visibleAt: number;
  tags: Record<string, string>;
  vpcId?: string;
  /** Groups whose members the ingress admits on every port (UserIdGroupPairs): a multi-node run's self-reference. */
  peers?: string[];
}

export class Ec2Emulator extends EmulatorBase {
  readonly keyPairs: KeyPair[] = [];
  readonly groups: Group[] = [];
  /** Placement groups by name, with their strategy (cluster, spread, partition). */
  readonly placementGroups = new Map<string, { strategy: string; tags: Record<string, string> }>();
  readonly region: string;
  /** Requests that came without a SigV4 Authorization header. */
  unsigned = 0;
  /**
   * As the region's image list looks: AWS rebuilds older framework DLAMIs with patches, so the newest creation
   * date is a PyTorch 2.5 image, while the SSM parameter of the newest PyTorch names the 2.7 one.
   */
  readonly images = [
    {
      id: AMI.pt25old,
      name: 'Deep Learning OSS Nvidia Driver AMI GPU PyTorch 2.5 (Ubuntu 22.04) 20250101',
      date: '2025-01-01T00:00:00.000Z',
      root: '/dev/sda1',
    },
    { id: AMI.pt27, name: 'Deep Learning OSS Nvidia Driver AMI GPU PyTorch 2.7 (Ubuntu 22.04) 20250920', date: '2025-09-20T00:00:00.000Z', root: '/dev/sda1' },
    { id: AMI.pt25, name: 'Deep Learning OSS Nvidia Driver AMI GPU PyTorch 2.5 (Ubuntu 22.04) 20251001', date: '2025-10-01T00:00:00.000Z', root: '/dev/sda1' },
    { id: AMI.ubuntu, name: 'ubuntu/images/hvm-ssd/ubuntu-jammy-22.04-amd64-server-20251005', date: '2025-10-05T00:00:00.000Z', root: '/dev/sda1' },
  ];
  /** The public DLAMI parameters, served through SSM GetParameters on this endpoint. */
  readonly ssm: SsmParameters;
  /** VPCs, subnets and route tables; a default VPC unless a test removes it. */
  readonly net: Ec2Networks;
  /** Spot requests: persistent ones stop on an interruption and start the same instance again (ec2SpotRequests.ts). */
  readonly spotRequests = new Ec2SpotRequests(this.instances, (i) => this.refresh(i));
  private tokens = new Map<string, string>();
  /** Milliseconds a new instance, group or key pair stays invisible to the calls that follow its creation. */
  consistencyMs: number;
  private readonly visibleAt = new Map<string, number>();
  /** NotFound answers given for resources that existed (lag), by code. */
  readonly lagAnswers: string[] = [];

  constructor(options: EmulatorOptions & { region?: string; consistencyMs?: number } = {}) {
    super(options);
    this.region = options.region ?? 'us-east-1';
    this.consistencyMs = options.slow?.listLagSec ? options.slow.listLagSec * 1000 : (options.consistencyMs ?? 150);
    this.ssm = new SsmParameters(this.region);
    this.net = new Ec2Networks(this.region);
    this.ssm.values.set('/aws/service/deeplearning/ami/x86_64/oss-nvidia-driver-gpu-pytorch-2.7-ubuntu-22.04/latest/ami-id', AMI.pt27);
    this.ssm.values.set('/aws/service/deeplearning/ami/x86_64/oss-nvidia-driver-gpu-pytorch-2.5-ubuntu-22.04/latest/ami-id', AMI.pt25);
  }

  private visible(id: string): boolean {
    return (this.visibleAt.get(id) ?? 0) <= Date.now();
  }

  private lagError(res: ServerResponse, code: string, message: string): void {
    this.lagAnswers.push(code);
    this.error(res, 400, code, message);
  }

  protected operationOf(req: IncomingMessage, body: string): string {
    const target = String(req.headers['x-amz-target'] ?? '');
    if (target.startsWith('AmazonSSM.')) return `ssm:${target.slice('AmazonSSM.'.length)}`;
    return new URLSearchParams(body).get('Action') ?? 'unknown';
  }

  private error(res: ServerResponse, status: number, code: string, message: string): void {
    send(
      res,
      status,
      'text/xml;charset=UTF-8',
      `<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>${code}</Code><Message>${esc(message)}</Message></Error></Errors><RequestID>${randomBytes(8).toString('hex')}</RequestID></Response>`,
    );
  }

  protected writeFault(_op: string, fault: Fault, res: ServerResponse): void {
    if (fault.kind === 'capacity')
      this.error(res, 500, 'InsufficientInstanceCapacity', 'We currently do not have sufficient capacity in the Availability Zone you requested.');
    else if (fault.kind === 'status') {
      if (fault.body) send(res, fault.status, fault.contentType ?? 'text/xml;charset=UTF-8', fault.body);
      else if (fault.status === 503 || fault.status === 429) this.error(res, 503, 'RequestLimitExceeded', 'Request limit exceeded.');
      else this.error(res, fault.status, 'InternalError', 'An internal error has occurred');
    }
  }

  /** A fault answering with one of EC2's own error codes (docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html). */
  static errorFault(status: number, code: string, message: string): Fault {
    return {
      kind: 'status',
      status,
      body: `<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>${code}</Code><Message>${esc(message)}</Message></Error></Errors><RequestID>${randomBytes(8).toString('hex')}</RequestID></Response>`,
    };
  }

  private ok(res: ServerResponse, action: string, inner: string): void {
    send(
      res,
      200,
      'text/xml;charset=UTF-8',
      `<?xml version="1.0" encoding="UTF-8"?>\n<${action}Response xmlns="${NS}"><requestId>${randomBytes(8).toString('hex')}</requestId>${inner}</${action}Response>`,
    );
  }

  private instanceXml(i: EmulatedInstance): string {
    this.refresh(i);
    const tags = Object.entries(i.tags)
      .map(([k, v]) => `<item><key>${esc(k)}</key><value>${esc(v)}</value></item>`)
      .join('');
    const r = i.request as Params;
    return (
      `<item><instanceId>${i.id}</instanceId><imageId>${esc(r.get('ImageId') ?? '')}</imageId>` +
      `<instanceState><code>${STATE_CODE[i.state]}</code><name>${STATE_NAME[i.state]}</name></instanceState>` +
      `<keyName>${esc(r.get('KeyName') ?? '')}</keyName><amiLaunchIndex>0</amiLaunchIndex><instanceType>${i.type}</instanceType>` +
      `<launchTime>${new Date(i.launchedAt).toISOString()}</launchTime><placement><availabilityZone>${i.zone}</availabilityZone><tenancy>default</tenancy></placement>` +
      (r.get('@subnet') ? `<subnetId>${r.get('@subnet')}</subnetId><vpcId>${r.get('@vpc') ?? ''}</vpcId>` : '') +
      (i.state === 'running' && i.ip ? `<ipAddress>${i.ip}</ipAddress>` : '') +
      (i.spot ? '<instanceLifecycle>spot</instanceLifecycle>' : '') +
      (this.spotRequests.idOf(i.id) ? `<spotInstanceRequestId>${this.spotRequests.idOf(i.id)!}</spotInstanceRequestId>` : '') +
      (this.spotRequests.stateReasonOf(i.id)
        ? '<stateReason><code>Server.SpotInstanceShutdown</code><message>Server.SpotInstanceShutdown: Spot instance shutdown</message></stateReason>'
        : '') +
      (i.reclaimed
        ? '<stateReason><code>Server.SpotInstanceTermination</code><message>Server.SpotInstanceTermination: Spot instance termination</message></stateReason>'
        : '') +
      `<tagSet>${tags}</tagSet></item>`
    );
  }

  protected route(op: string, req: IncomingMessage, body: string, res: ServerResponse, fault: Fault | undefined): void {
    if (!/^AWS4-HMAC-SHA256 Credential=/.test(String(req.headers.authorization ?? ''))) this.unsigned++;
    if (op.startsWith('ssm:')) return this.ssm.handle(op.slice(4), body, res);
    const p: Params = new Map(new URLSearchParams(body));
    const f = filters(p);
    switch (op) {
      case 'DescribeInstanceTypeOfferings': {
        const wanted = f.get('instance-type') ?? EC2_EMULATED_TYPES;
        const items = EC2_EMULATED_TYPES.filter((t) => wanted.includes(t)).flatMap((t) =>
          ['a', 'b'].map(
            (z) => `<item><instanceType>${t}</instanceType><locationType>availability-zone</locationType><location>${this.region}${z}</location></item>`,
          ),
        );
        this.ok(res, op, `<instanceTypeOfferingSet>${items.join('')}</instanceTypeOfferingSet>`);
        return;
      }
      case 'DescribeSpotPriceHistory': {
        const types = list(p, 'InstanceType');
        const now = Date.now();
        const items = EC2_EMULATED_TYPES.filter((t) => types.length === 0 || types.includes(t)).flatMap((t, n) =>
          [
            // Older and newer quotes per zone: the client must take the latest of each zone.
            { z: 'a', price: 0.2 + n * 0.1, at: now - 1800_000 },
            { z: 'a', price: 0.25 + n * 0.1, at: now - 60_000 },
            { z: 'b', price: 0.22 + n * 0.1, at: now - 60_000 },
          ].map(
            (q) =>
              `<item><instanceType>${t}</instanceType><productDescription>Linux/UNIX</productDescription><spotPrice>${q.price.toFixed(6)}</spotPrice><timestamp>${new Date(q.at).toISOString()}</timestamp><availabilityZone>${this.region}${q.z}</availabilityZone></item>`,
          ),
        );
        this.ok(res, op, `<spotPriceHistorySet>${items.join('')}</spotPriceHistorySet><nextToken/>`);
        return;
      }
      case 'DescribeImages': {
        const owners = list(p, 'Owner');
        const ids = list(p, 'ImageId');
        // Asked by id, an unknown image is an error (not an empty list), as EC2 answers it.
        const unknown = ids.find((id) => !this.images.some((i) => i.id === id));
        if (unknown) return this.error(res, 400, 'InvalidAMIID.NotFound', `The image id '[${unknown}]' does not exist`);
        const names = f.get('name') ?? ['*'];
        const imgs = ids.length
          ? this.images.filter((i) => ids.includes(i.id))
          : owners.includes('amazon')
            ? this.images.filter((i) => names.some((n) => glob(n, i.name)))
            : [];
        const items = imgs.map(
          (i) =>
            `<item><imageId>${i.id}</imageId><name>${esc(i.name)}</name><imageState>available</imageState><creationDate>${i.date}</creationDate><architecture>x86_64</architecture><rootDeviceName>${i.root}</rootDeviceName><imageOwnerAlias>amazon</imageOwnerAlias></item>`,
        );
        this.ok(res, op, `<imagesSet>${items.join('')}</imagesSet>`);
        return;
      }
      case 'DescribeKeyPairs': {
        const names = list(p, 'KeyName');
        const found = this.keyPairs.filter((k) => (names.length === 0 || names.includes(k.name)) && k.visibleAt <= Date.now());
        const missing = names.find((n) => !found.some((k) => k.name === n));
        if (missing && this.keyPairs.some((k) => k.name === missing))
          return this.lagError(res, 'InvalidKeyPair.NotFound', `The key pair '${missing}' does not exist`);
        if (missing) return this.error(res, 400, 'InvalidKeyPair.NotFound', `The key pair '${missing}' does not exist`);
        this.ok(
          res,
          op,
          `<keySet>${found.map((k) => `<item><keyPairId>${k.id}</keyPairId><keyName>${esc(k.name)}</keyName><keyFingerprint>00:00</keyFingerprint></item>`).join('')}</keySet>`,
        );
        return;
      }
      case 'ImportKeyPair': {
        const name = p.get('KeyName') ?? '';
        if (this.keyPairs.some((k) => k.name === name)) return this.error(res, 400, 'InvalidKeyPair.Duplicate', `The keypair '${name}' already exists.`);
        const material = Buffer.from(p.get('PublicKeyMaterial') ?? '', 'base64').toString('utf8');
        if (!/^ssh-(ed25519|rsa) /.test(material)) return this.error(res, 400, 'InvalidKey.Format', 'Key is not in valid OpenSSH public key format');
        const k = { name, id: `key-${randomBytes(8).toString('hex')}`, material, visibleAt: Date.now() + this.consistencyMs };
        this.keyPairs.push(k);
        this.ok(res, op, `<keyFingerprint>00:00</keyFingerprint><keyName>${esc(name)}</keyName><keyPairId>${k.id}</keyPairId>`);
        return;
      }
      case 'DescribeSecurityGroups': {
        const names = f.get('group-name');
        const ids = list(p, 'GroupId');
        const vpcs = f.get('vpc-id');
        const gs = this.groups.filter(
          (g) =>
            (!names || names.includes(g.name)) &&
            (!ids.length || ids.includes(g.id)) &&
            (!vpcs || vpcs.includes(g.vpcId ?? 'vpc-0default')) &&
            g.visibleAt <= Date.now(),
        );
        const missing = ids.find((id) => !gs.some((g) => g.id === id));
        if (missing) return this.error(res, 400, 'InvalidGroup.NotFound', `The security group '${missing}' does not exist`);
        const perms = (g: Group): string =>
          g.cidrs
            .map(
              (c) =>
                `<item><ipProtocol>${esc(c.proto)}</ipProtocol><fromPort>${c.from}</fromPort><toPort>${c.to}</toPort><groups/><ipRanges><item><cidrIp>${esc(c.cidr)}</cidrIp></item></ipRanges><ipv6Ranges/><prefixListIds/></item>`,
            )
            .join('');
        const tagSet = (g: Group): string =>
          Object.entries(g.tags)
            .map(([k, v]) => `<item><key>${esc(k)}</key><value>${esc(v)}</value></item>`)
            .join('');
        this.ok(
          res,
          op,
          `<securityGroupInfo>${gs.map((g) => `<item><ownerId>123456789012</ownerId><groupId>${g.id}</groupId><groupName>${esc(g.name)}</groupName><groupDescription>${esc(g.description)}</groupDescription><vpcId>${g.vpcId ?? 'vpc-0default'}</vpcId><ipPermissions>${perms(g)}</ipPermissions><ipPermissionsEgress/><tagSet>${tagSet(g)}</tagSet></item>`).join('')}</securityGroupInfo>`,
        );
        return;
      }
      case 'CreateSecurityGroup': {
        const tags: Record<string, string> = {};
        for (let m = 1; p.has(`TagSpecification.1.Tag.${m}.Key`); m++)
          tags[p.get(`TagSpecification.1.Tag.${m}.Key`)!] = p.get(`TagSpecification.1.Tag.${m}.Value`) ?? '';
        const g: Group = {
          id: `sg-${randomBytes(8).toString('hex')}`,
          name: p.get('GroupName') ?? '',
          description: p.get('GroupDescription') ?? '',
          cidrs: [] as Group['cidrs'],
          visibleAt: Date.now() + this.consistencyMs,
          tags,
        };
        if (!g.description) return this.error(res, 400, 'MissingParameter', 'The request must contain the parameter groupDescription');
        // Without VpcId the group goes to the default VPC; an account without one is refused (EC2-Classic is gone).
        const vpcId = p.get('VpcId') ?? this.net.defaultVpc?.id;
        if (!vpcId) return this.error(res, 400, 'VPCIdNotSpecified', 'No default VPC for this user');
        if (!this.net.vpcs.some((v) => v.id === vpcId)) return this.error(res, 400, 'InvalidVpcID.NotFound', `The vpc ID '${vpcId}' does not exist`);
        g.vpcId = vpcId;
        if (this.groups.some((x) => x.name === g.name && (x.vpcId ?? 'vpc-0default') === vpcId))
          return this.error(res, 400, 'InvalidGroup.Duplicate', `The security group '${g.name}' already exists for VPC '${vpcId}'`);
        this.groups.push(g);
        this.ok(res, op, `<return>true</return><groupId>${g.id}</groupId>`);
        return;
      }
      case 'CreatePlacementGroup': {
        const name = p.get('GroupName') ?? '';
        const strategy = p.get('Strategy') ?? '';
        if (!['cluster', 'spread', 'partition'].includes(strategy)) return this.error(res, 400, 'InvalidParameterValue', `Invalid strategy '${strategy}'`);
        if (this.placementGroups.has(name)) return this.error(res, 400, 'InvalidPlacementGroup.Duplicate', `The Placement Group '${name}' already exists.`);
        const tags: Record<string, string> = {};
        for (let m = 1; p.has(`TagSpecification.1.Tag.${m}.Key`); m++)
          tags[p.get(`TagSpecification.1.Tag.${m}.Key`)!] = p.get(`TagSpecification.1.Tag.${m}.Value`) ?? '';
        this.placementGroups.set(name, { strategy, tags });
        this.ok(res, op, '<return>true</return>');
        return;
      }
      case 'DeletePlacementGroup': {
        const name = p.get('GroupName') ?? '';
        if (!this.placementGroups.has(name)) return this.error(res, 400, 'InvalidPlacementGroup.Unknown', `The Placement Group '${name}' is unknown.`);
        if (this.usersOf((q) => q.get('Placement.GroupName') === name).length)
          return this.error(res, 400, 'InvalidPlacementGroup.InUse', `The placement group '${name}' is in use and may not be deleted.`);
        this.placementGroups.delete(name);
        this.ok(res, op, '<return>true</return>');
        return;
      }
      case 'DeleteSecurityGroup': {
        const id = p.get('GroupId') ?? '';
        const g = this.groups.find((x) => x.id === id);
        if (!g) return this.error(res, 400, 'InvalidGroup.NotFound', `The security group '${id}' does not exist`);
        if (
          this.usersOf((q) => [...q.entries()].some(([k, v]) => /^(SecurityGroupId\.\d+|NetworkInterface\.1\.SecurityGroupId\.\d+)$/.test(k) && v === id))
            .length
        )
          return this.error(res, 400, 'DependencyViolation', `resource ${id} has a dependent object`);
        this.groups.splice(this.groups.indexOf(g), 1);
        this.ok(res, op, '<return>true</return>');
        return;
      }
      case 'AuthorizeSecurityGroupIngress':
      case 'RevokeSecurityGroupIngress': {
        const g = this.groups.find((x) => x.id === p.get('GroupId'));
        if (!g) return this.error(res, 400, 'InvalidGroup.NotFound', `The security group '${p.get('GroupId') ?? ''}' does not exist`);
        if (g.visibleAt > Date.now()) return this.lagError(res, 'InvalidGroup.NotFound', `The security group '${g.id}' does not exist`);
        const rules: Group['cidrs'] = [];
        for (let n = 1; p.has(`IpPermissions.${n}.IpProtocol`); n++) {
          for (const cidr of collectCidrs(p, n)) {
            rules.push({
              proto: p.get(`IpPermissions.${n}.IpProtocol`) ?? '',
              from: Number(p.get(`IpPermissions.${n}.FromPort`)),
              to: Number(p.get(`IpPermissions.${n}.ToPort`)),
              cidr,
            });
          }
        }
        // UserIdGroupPairs arrive as IpPermissions.n.Groups.m.GroupId (the EC2 query name of the member).
        const peers: string[] = [];
        for (let n = 1; p.has(`IpPermissions.${n}.IpProtocol`); n++)
          for (let m = 1; p.has(`IpPermissions.${n}.Groups.${m}.GroupId`); m++) peers.push(p.get(`IpPermissions.${n}.Groups.${m}.GroupId`)!);
        if (op === 'AuthorizeSecurityGroupIngress' && peers.length) {
          if (peers.some((x) => g.peers?.includes(x))) return this.error(res, 400, 'InvalidPermission.Duplicate', 'the specified rule already exists');
          g.peers = [...(g.peers ?? []), ...peers];
        }
        const same = (a: Group['cidrs'][number], b: Group['cidrs'][number]): boolean =>
          a.proto === b.proto && a.from === b.from && a.to === b.to && a.cidr === b.cidr;
        if (op === 'AuthorizeSecurityGroupIngress') {
          const dup = rules.find((r) => g.cidrs.some((c) => same(c, r)));
          if (dup)
            return this.error(
              res,
              400,
              'InvalidPermission.Duplicate',
              `the specified rule "peer: ${dup.cidr}, TCP, from port: ${dup.from}, to port: ${dup.to}, ALLOW" already exists`,
            );
          g.cidrs.push(...rules);
        } else {
          const unknown = rules.find((r) => !g.cidrs.some((c) => same(c, r)));
          if (unknown) return this.error(res, 400, 'InvalidPermission.NotFound', 'The specified rule does not exist in this security group.');
          g.cidrs = g.cidrs.filter((c) => !rules.some((r) => same(c, r)));
        }
        this.ok(res, op, '<return>true</return>');
        return;
      }
      case 'RunInstances': {
        const token = p.get('ClientToken');
        const pg = p.get('Placement.GroupName');
        if (pg && !this.placementGroups.has(pg)) return this.error(res, 400, 'InvalidPlacementGroup.Unknown', `The Placement Group '${pg}' is unknown.`);
        const known = token ? this.tokens.get(token) : undefined;
        if (known && this.instances.has(known) && !sameLaunch(this.instances.get(known)!.request as Params, p))
          return this.error(
            res,
            400,
            'IdempotentParameterMismatch',
            `The client token '${token ?? ''}' has already been used with different parameters for instance '${known}'.`,
          );
        if (known && this.instances.has(known)) {
          // Idempotent launch: the same token answers with the same instance (and that answer can be lost too).
          if (this.withheld(fault, res)) return;
          this.ok(
            res,
            op,
            `<reservationId>r-${known}</reservationId><ownerId>123456789012</ownerId><instancesSet>${this.instanceXml(this.instances.get(known)!)}</instancesSet>`,
          );
          return;
        }
        const type = p.get('InstanceType') ?? '';
        if (!EC2_EMULATED_TYPES.includes(type)) return this.error(res, 400, 'InvalidParameterValue', `Invalid value '${type}' for InstanceType.`);
        if (!this.images.some((i) => i.id === p.get('ImageId')))
          return this.error(res, 400, 'InvalidAMIID.NotFound', `The image id '[${p.get('ImageId') ?? ''}]' does not exist`);
        const key = this.keyPairs.find((k) => k.name === p.get('KeyName'));
        if (!key) return this.error(res, 400, 'InvalidKeyPair.NotFound', `The key pair '${p.get('KeyName') ?? ''}' does not exist`);
        if (key.visibleAt > Date.now()) return this.lagError(res, 'InvalidKeyPair.NotFound', `The key pair '${key.name}' does not exist`);
        // The network: a subnet named on the first network interface (or top level), else the default VPC's.
        const nic = p.has('NetworkInterface.1.DeviceIndex') || p.has('NetworkInterface.1.SubnetId');
        const topGroups = list(p, 'SecurityGroupId');
        if (nic && topGroups.length)
          return this.error(
            res,
            400,
            'InvalidParameterCombination',
            'Network interfaces and an instance-level security groups may not be specified on the same request',
          );
        const groupIds = nic ? list(p, 'NetworkInterface.1.SecurityGroupId') : topGroups;
        const subnetId = p.get('NetworkInterface.1.SubnetId') ?? p.get('SubnetId');
        const placementZone = p.get('Placement.AvailabilityZone');
        let subnet = subnetId ? this.net.subnets.find((x) => x.id === subnetId) : undefined;
        if (subnetId && !subnet) return this.error(res, 400, 'InvalidSubnetID.NotFound', `The subnet ID '${subnetId}' does not exist`);
        if (!subnet) {
          const dv = this.net.defaultVpc;
          if (!dv)
            return this.error(res, 400, 'VPCIdNotSpecified', 'No default VPC for this user. GroupName is only supported for EC2-Classic and default VPC.');
          subnet =
            this.net.subnets.find((x) => x.vpcId === dv.id && x.defaultForAz && (!placementZone || x.zone === placementZone)) ??
            this.net.subnets.find((x) => x.vpcId === dv.id);
          if (!subnet) return this.error(res, 400, 'MissingInput', `No subnets found for the default VPC '${dv.id}'. Please specify a subnet.`);
        }
        if (placementZone && placementZone !== subnet.zone)
          return this.error(
            res,
            400,
            'InvalidParameterValue',
            `Value (${placementZone}) for parameter availabilityZone is invalid. Subnet '${subnet.id}' is in the availability zone ${subnet.zone}`,
          );
        for (const gid of groupIds) {
          const g = this.groups.find((x) => x.id === gid);
          if (!g) return this.error(res, 400, 'InvalidGroup.NotFound', `The security group '${gid}' does not exist`);
          if (g.visibleAt > Date.now())
            return this.lagError(res, 'InvalidGroup.NotFound', `The security group '${gid}' does not exist in VPC '${g.vpcId ?? 'vpc-0default'}'`);
          if ((g.vpcId ?? 'vpc-0default') !== subnet.vpcId)
            return this.error(res, 400, 'InvalidParameter', `Security group ${gid} and subnet ${subnet.id} belong to different networks.`);
        }
        const spotRefusal = p.get('InstanceMarketOptions.MarketType') === 'spot' ? Ec2SpotRequests.refusal(p) : undefined;
        if (spotRefusal) return this.error(res, 400, 'InvalidParameterCombination', spotRefusal);
        if (fault?.kind === 'capacity') return this.writeFault(op, fault, res);
        if (this.noCapacityIn.has(subnet.zone) && this.capacityRefusals.push(subnet.zone))
          return this.error(
            res,
            500,
            'InsufficientInstanceCapacity',
            `We currently do not have sufficient ${type} capacity in the Availability Zone you requested (${subnet.zone}). Our system will be working on provisioning additional capacity. You can currently get ${type} capacity by not specifying an Availability Zone in your request or choosing ${this.net.subnets.find((x) => x.zone !== subnet.zone && !this.noCapacityIn.has(x.zone))?.zone ?? 'another zone'}.`,
          );
        // A public address only when asked for or when the subnet hands them out; reachable only through an internet gateway.
        const wantsPublic =
          p.get('NetworkInterface.1.AssociatePublicIpAddress') === 'true' ||
          (p.get('NetworkInterface.1.AssociatePublicIpAddress') === undefined && subnet.mapPublicIp);
        const ip = !wantsPublic ? '' : this.net.reachable(subnet) ? this.instanceIp : '127.0.0.2';
        p.set('@subnet', subnet.id);
        p.set('@vpc', subnet.vpcId);
        const tags: Record<string, string> = {};
        for (let n = 1; p.has(`TagSpecification.${n}.ResourceType`); n++) {
          if (p.get(`TagSpecification.${n}.ResourceType`) !== 'instance') continue;
          for (let m = 1; p.has(`TagSpecification.${n}.Tag.${m}.Key`); m++)
            tags[p.get(`TagSpecification.${n}.Tag.${m}.Key`)!] = p.get(`TagSpecification.${n}.Tag.${m}.Value`) ?? '';
        }
        const id = `i-${randomBytes(8).toString('hex')}`;
        this.instances.set(id, {
          id,
          name: tags.Name ?? '',
          type,
          region: this.region,
          zone: subnet.zone,
          state: 'pending',
          ip,
          tags,
          spot: p.get('InstanceMarketOptions.MarketType') === 'spot',
          launchedAt: Date.now(),
          createdAt: Date.now(),
          request: p,
        });
        if (this.instances.get(id)!.spot) this.spotRequests.open(this.instances.get(id)!, p);
        if (token) this.tokens.set(token, id);
        this.visibleAt.set(id, Date.now() + this.consistencyMs);
        if (this.withheld(fault, res)) return;
        this.ok(
          res,
          op,
          `<reservationId>r-${id}</reservationId><ownerId>123456789012</ownerId><instancesSet>${this.instanceXml(this.instances.get(id)!)}</instancesSet>`,
        );
        return;
      }
      case 'DescribeVpcs':
        this.ok(res, op, this.net.describeVpcs(f, list(p, 'VpcId')));
        return;
      case 'DescribeSubnets':
        this.ok(res, op, this.net.describeSubnets(f, list(p, 'SubnetId')));
        return;
      case 'DescribeRouteTables':
        this.ok(res, op, this.net.describeRouteTables(f));
        return;
      case 'DescribeInstances': {
        const ids = list(p, 'InstanceId');
        const missing = ids.find((id) => !this.instances.has(id) || !this.visible(id));
        if (missing)
          return this.instances.has(missing)
            ? this.lagError(res, 'InvalidInstanceID.NotFound', `The instance ID '${missing}' does not exist`)
            : this.error(res, 400, 'InvalidInstanceID.NotFound', `The instance ID '${missing}' does not exist`);
        let all = [...this.instances.values()].filter((i) => this.visible(i.id)).map((i) => this.refresh(i));
        if (ids.length) all = all.filter((i) => ids.includes(i.id));
        for (const [name, values] of f) {
          if (name === 'tag-key') all = all.filter((i) => values.some((v) => v in i.tags));
          else if (name === 'instance-state-name') all = all.filter((i) => values.includes(STATE_NAME[i.state] ?? ''));
          else if (name.startsWith('tag:')) all = all.filter((i) => values.includes(i.tags[name.slice(4)] ?? '\u0000'));
          else if (name === 'client-token') all = all.filter((i) => values.includes((i.request as Params).get('ClientToken') ?? '\u0000'));
          else return this.error(res, 400, 'InvalidParameterValue', `The filter '${name}' is invalid`);
        }
        const items = all.map(
          (i) => `<item><reservationId>r-${i.id}</reservationId><ownerId>123456789012</ownerId><instancesSet>${this.instanceXml(i)}</instancesSet></item>`,
        );
        this.ok(res, op, `<reservationSet>${items.join('')}</reservationSet>`);
        return;
      }
      case 'TerminateInstances':
      case 'StopInstances': {
        const ids = list(p, 'InstanceId');
        // Inside the window this answer does not mean terminated: nothing happens to the instance.
        const missing = ids.find((id) => !this.instances.has(id) || !this.visible(id));
        if (missing)
          return this.instances.has(missing)
            ? this.lagError(res, 'InvalidInstanceID.NotFound', `The instance ID '${missing}' does not exist`)
            : this.error(res, 400, 'InvalidInstanceID.NotFound', `The instance ID '${missing}' does not exist`);
        const items = ids.map((id) => {
          const i = this.instances.get(id)!;
          const prev = i.state;
          if (op === 'TerminateInstances' && i.state !== 'terminated') {
            i.state = 'terminating';
            this.spotRequests.terminated(id);
          }
          if (op === 'StopInstances') {
            if (i.spot && !this.spotRequests.stopsOnInterruption(id)) return undefined;
            if (i.state === 'running' || i.state === 'pending') i.state = 'stopping';
            this.spotRequests.stoppedByUser(id);
          }
          return `<item><instanceId>${id}</instanceId><currentState><code>${STATE_CODE[i.state]}</code><name>${STATE_NAME[i.state]}</name></currentState><previousState><code>${STATE_CODE[prev]}</code><name>${STATE_NAME[prev]}</name></previousState></item>`;
        });
        if (items.includes(undefined))
          return this.error(res, 400, 'UnsupportedOperation', "You can't stop the Spot Instance because it is a one-time Spot Instance request.");
        if (this.withheld(fault, res)) return;
        this.ok(res, op, `<instancesSet>${items.join('')}</instancesSet>`);
        return;
      }
      case 'DescribeSpotInstanceRequests':
      case 'CancelSpotInstanceRequests': {
        const ids = list(p, 'SpotInstanceRequestId');
        const out = op === 'CancelSpotInstanceRequests' ? this.spotRequests.cancel(ids) : this.spotRequests.describe(ids, f);
        if (out.error) return this.error(res, 400, out.error.code, out.error.message);
        this.ok(res, op, out.body ?? '');
        return;
      }
      default:
        this.error(res, 400, 'InvalidAction', `The action ${op} is not valid for this web service.`);
    }
  }

  /** EC2 applies the instance's InstanceInitiatedShutdownBehavior: terminate ends it, stop (the default) stops it. */
  override guestPowerOff(id: string): void {
    const i = this.instances.get(id);
    if (!i || i.state === 'terminated') return;
    i.state = (i.request as Params).get('InstanceInitiatedShutdownBehavior') === 'terminate' ? 'terminated' : 'stopped';
    if (i.state === 'terminated') this.spotRequests.terminated(id);
    else this.spotRequests.stoppedByUser(id);
  }

  /** A spot interruption: a persistent request with stop/hibernate stops the instance, any other ends it. */
  override reclaim(id: string): void {
    if (this.spotRequests.stopsOnInterruption(id)) this.spotRequests.interrupt(id);
    else super.reclaim(id);
  }

  /**
   * Spot capacity is back in the zone: EC2 starts the interrupted instance again (same id, same volume), with a
   * new public address unless it has an Elastic IP (`ip`; absent: the same, for a test whose sshd stays put).
   */
  capacityReturns(id: string, ip?: string): boolean {
    const started = this.spotRequests.capacityReturns(id);
    const i = this.instances.get(id);
    if (started && i && ip) i.ip = ip;
    return started;
  }

  /** Instances not yet terminated whose launch request matches: what keeps a group from being deleted. */
  private usersOf(match: (request: Params) => boolean): EmulatedInstance[] {
    return this.billing().filter((i) => match(i.request as Params));
  }

  /** Whether the security group ingress opened port 22 to exactly this /32 and nothing else. */
  ingressOf(groupId: string): Group['cidrs'] {
    return this.groups.find((g) => g.id === groupId)?.cidrs ?? [];
  }

  protected override handlesCapacityInRoute(): boolean {
    return true;
  }
}

/** Whether two RunInstances requests ask for the same launch: every parameter but the token and our own notes (@…). */
function sameLaunch(a: Params, b: Params): boolean {
  const canon = (p: Params): string =>
    JSON.stringify([...p.entries()].filter(([k]) => !k.startsWith('@') && k !== 'ClientToken' && k !== 'Version').sort(([x], [y]) => x.localeCompare(y)));
  return canon(a) === canon(b);
}

function collectCidrs(p: Params, n: number): string[] {
  const out: string[] = [];
  for (let m = 1; p.has(`IpPermissions.${n}.IpRanges.${m}.CidrIp`); m++) out.push(p.get(`IpPermissions.${n}.IpRanges.${m}.CidrIp`)!);
  return out;
}
