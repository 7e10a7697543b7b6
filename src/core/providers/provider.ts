import type { InstanceHostKey } from './instanceHostKey';
// One interface for every place a run can go: a provisioned cloud instance, a plain SSH host, this machine.
// Cloud providers own what they launch; ssh and local own nothing and never terminate anything.

export type ProviderKind = 'ssh' | 'local' | 'lambda' | 'ec2' | 'gcp';

/** Whether a provider says the offer can be launched right now. EC2 has no capacity API, hence 'unknown'. */
export type Capacity = 'available' | 'unavailable' | 'unknown';

export interface Offer {
  readonly provider: ProviderKind;
  /** The provider's own name: gpu_1x_a100, g5.xlarge, a2-highgpu-1g. */
  readonly instanceType: string;
  /** GPU catalog id where one fits (T4, A10G, L4, V100, A100-40GB, A100-80GB, H100, H200), else the provider's name. */
  readonly gpu: string;
  readonly gpuCount: number;
  /** Memory of one GPU. */
  readonly vramGiB: number;
  readonly region: string;
  readonly zone?: string;
  /** USD per hour for the whole instance. */
  readonly pricePerHour: number;
  /** Where the price comes from and its date (a price list, a spot price history, a catalog), for the confirmation. */
  readonly priceSource?: string;
  readonly spot: boolean;
  readonly capacity: Capacity;
  readonly vcpus?: number;
  readonly memoryGiB?: number;
}

export interface OfferQuery {
  readonly gpu?: string;
  readonly gpuCount?: number;
  readonly region?: string;
  /** A zone within the region (EC2 availability zone, GCP zone); providers without zones ignore it. */
  readonly zone?: string;
  readonly spot?: boolean;
  /** The provider's own type name (g5.xlarge, a2-highgpu-1g, gpu_1x_a100): only that type. */
  readonly instanceType?: string;
}

export interface LaunchRequest {
  /** Ties the instance to a run: it becomes a tag, a label or the instance name, so listOwned finds it after a crash. */
  readonly runId: string;
  readonly instanceType: string;
  readonly region: string;
  readonly zone?: string;
  readonly spot: boolean;
  /** OpenSSH one-line public key (`ssh-ed25519 AAAA… comment`); never the private key. */
  readonly sshPublicKey: string;
  readonly diskGiB?: number;
  /**
   * This installation's owner id, put in a tag, label or the API's tags: the orphan sweep offers to terminate
   * only instances with its own id (a colleague on the same account runs their own instances).
   */
  readonly ownerId?: string;
  /** The SSH host key the instance is to have (providers with deliversHostKey put it in the user-data). */
  readonly hostKey?: InstanceHostKey;
  /**
   * Names this launch among the run's launches (a replacement after a spot reclaim, another zone after a
   * capacity refusal): it goes into the idempotency token, which would otherwise hand back the first instance.
   */
  readonly launchKey?: string;
  /** The spec names the zone (or a volume lives there): a refusal there is final, no other zone is tried. */
  readonly zonePinned?: boolean;
  /** More regions whose zones may be tried after this region's have refused (the spec's target.regions). */
  readonly regions?: readonly string[];
  /** Progress lines while launching (a zone refused, the next one tried). */
  readonly progress?: (line: string) => void;
  /** EC2: the instance profile (name or ARN) the instance gets, so the host reads S3 with a role, not shipped keys. */
  readonly iamInstanceProfile?: string;
  /** GCP: the service account the VM runs as (default: the project's default compute account), with storage read/write scope. */
  readonly serviceAccount?: string;
  /**
   * EC2 spot: 'cloud' opens a persistent request that stops the instance on an interruption and has EC2 start
   * it again when capacity returns (ec2/spotRecovery.ts); absent or 'extension': one-time, relaunched by us.
   */
  readonly spotRecovery?: 'extension' | 'cloud';
  /** EC2 spot with spotRecovery cloud: hibernate instead of stop where the instance type can. */
  readonly spotHibernate?: boolean;
  /**
   * Multi-node: this instance is node `index` of the run's `size`. It joins what prepareCluster made for the run
   * (EC2: the placement group and the nodes' security group; GCP: the nodes' network tag); launchKey names the node.
   */
  readonly cluster?: { readonly size: number; readonly index: number };
}

export interface ZoneRefusal {
  readonly region: string;
  readonly zone: string;
  /** The ProviderError code (capacity, quota). */
  readonly code: string;
  readonly message: string;
}

/** Where a launch landed, at what price, and which zones refused it first. */
export interface Placement {
  readonly region: string;
  readonly zone?: string;
  readonly refused: readonly ZoneRefusal[];
  readonly pricePerHour?: number;
  readonly priceSource?: string;
}

export type InstanceState = 'pending' | 'running' | 'stopping' | 'stopped' | 'terminating' | 'terminated' | 'unknown';

export interface Instance {
  readonly provider: ProviderKind;
  readonly id: string;
  readonly name?: string;
  readonly runId?: string;
  readonly region: string;
  readonly zone?: string;
  readonly instanceType: string;
  readonly state: InstanceState;
  readonly publicIp?: string;
  readonly sshPort: number;
  readonly sshUser: string;
  readonly spot: boolean;
  readonly pricePerHour?: number;
  /** Milliseconds since the epoch. */
  readonly launchedAt?: number;
  /** The cloud took it back (spot reclaim, preemption): the run is interrupted and resumable elsewhere. */
  readonly interrupted?: boolean;
  /**
   * The instance's SSH host keys ("type base64") as the provider vouches for them (a key we generated and put
   * in its user-data, or one it publishes): the first connection then checks them instead of asking the user.
   */
  readonly hostKeys?: readonly string[];
  /** The owner id the instance was launched with (LaunchRequest.ownerId), when the cloud keeps it. */
  readonly ownerId?: string;
  /** Set by launch: where it landed and what was refused where (zone failover). */
  readonly placement?: Placement; /** The address the run's other instances reach it at (the VPC's, the network's): a multi-node rendezvous. */
  readonly privateIp?: string;
}

export interface WaitForSshOptions {
  readonly timeoutMs: number;
  /** Pause between describe/probe rounds. */
  readonly intervalMs?: number;
  readonly signal?: AbortSignal;
}

export interface Provider {
  readonly kind: ProviderKind;
  /** Whether this provider can stop (keep the disk, end compute billing) as opposed to only terminate. */
  readonly canStop: boolean;
  /**
   * Whether launch installs LaunchRequest.hostKey on the instance (cloud-init user-data), so the first
   * connection checks that key instead of trusting whatever answers. Providers without it ask the user once.
   */
  readonly deliversHostKey?: boolean;
  listOffers(query: OfferQuery, signal?: AbortSignal): Promise<Offer[]>;
  launch(request: LaunchRequest, signal?: AbortSignal): Promise<Instance>;
  /** Resolves with the instance once its SSH port answers with an SSH banner; rejects on timeout or abort. */
  waitForSsh(instanceId: string, options: WaitForSshOptions): Promise<Instance>;
  /** undefined when the provider no longer knows the instance (deleted). */
  describe(instanceId: string, signal?: AbortSignal): Promise<Instance | undefined>;
  terminate(instanceId: string, signal?: AbortSignal): Promise<void>;
  stop(instanceId: string, signal?: AbortSignal): Promise<void>;
  /** Instances this extension launched (by tag, label or name prefix) that are not terminated. */
  listOwned(signal?: AbortSignal): Promise<Instance[]>;
  /**
   * Instances the launch may have created, found by the launch's own identity (EC2: its ClientToken, then the
   * run tag; GCP: the instance name and the run label; Lambda: the name). Without it cleanup filters listOwned.
   */
  findLaunched?(request: LaunchRequest, signal?: AbortSignal): Promise<Instance[]>;
  /**
   * How long after a launch call the provider's listings may still omit the instance it created (eventual
   * consistency): a launch whose outcome is unknown is looked for that long before it is taken as never made.
   */
  readonly consistencyWindowMs?: number;
  /** The longest one terminate may take to be confirmed (GCP awaits its delete operation): cleanup allows at least that. */
  readonly terminateTimeoutMs?: number;
  /**
   * Multi-node: makes what the run's nodes share before the first launches (EC2: a cluster placement group and a
   * security group whose members reach each other on every port, for the rendezvous and NCCL; GCP: a firewall rule
   * between instances with the run's network tag). Idempotent. Providers without it (Lambda) need nothing beyond
   * launching every node in the same region.
   */
  prepareCluster?(request: LaunchRequest, signal?: AbortSignal): Promise<void>;
  /** Deletes what prepareCluster made for the run (none of it bills, but it is ours); absent parts are fine. After the instances are gone. */
  releaseCluster?(runId: string, signal?: AbortSignal): Promise<void>;
  /** A named disk that outlives instances (EC2 EBS today): its zone when it exists, and attach to a running instance. */
  volumeZone?(name: string, signal?: AbortSignal): Promise<string | undefined>;
  attachVolume?(
    instance: Instance,
    volume: { readonly name: string; readonly sizeGiB: number },
    signal?: AbortSignal,
  ): Promise<{ readonly volumeId: string; readonly zone: string; readonly sizeGiB: number; readonly created: boolean }>;
}

export type ProviderErrorCode =
  'capacity' | 'quota' | 'auth' | 'rate-limited' | 'not-found' | 'invalid' | 'timeout' | 'unreachable' | 'aborted' | 'server' | 'unsupported';

/** A provider failure with a stable code, so callers pick a message and a retry without parsing text. */
export class ProviderError extends Error {
  constructor(
    readonly code: ProviderErrorCode,
    message: string,
    readonly provider?: ProviderKind,
  ) {
    super(message);
    this.name = 'ProviderError';
  }
}

/**
 * The call's result, or undefined when the provider says the instance is not found: for describe and
 * terminate, "already gone" is an answer (terminate wanted exactly that), not a failure.
 */
export async function unlessGone<T>(call: Promise<T>): Promise<T | undefined> {
  try {
    return await call;
  } catch (err) {
    if (err instanceof ProviderError && err.code === 'not-found') return undefined;
    throw err;
  }
}

export const OWNER_TAG = 'remote-finetune';
/** Tag (EC2, Lambda) and label (GCP) holding LaunchRequest.ownerId. */
export const OWNER_ID_TAG = 'rft-owner';
export const RUN_ID_TAG = 'remote-finetune:run-id';
/** Name prefix for providers without tags (Lambda) and for GCP instance names. */
export const INSTANCE_NAME_PREFIX = 'rft-';

/**
 * Instance name for a run: lowercase, [a-z0-9-], at most 63 characters (GCP's rule, the strictest).
 * Run ids (rft-YYYYMMDD-HHMMSS-xxxx) already carry the prefix and are used as they are.
 */
export function instanceNameFor(runId: string): string {
  const cleaned = runId
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '');
  const named = cleaned.startsWith(INSTANCE_NAME_PREFIX) ? cleaned : `${INSTANCE_NAME_PREFIX}${cleaned}`;
  return named.slice(0, 63).replace(/-+$/, '');
}

/**
 * The instance name of one launch of a run: a replacement's (or another node's) is its own, as its launchKey
 * says (the reclaimed VM of the same run may still be being deleted under the first name; Lambda has no token).
 */
export function launchNameFor(request: Pick<LaunchRequest, 'runId' | 'launchKey'>): string {
  return instanceNameFor(request.launchKey ? `${request.runId}-${request.launchKey}` : request.runId);
}

/** The run an owned instance belongs to, read back from its name (exact for run ids made by newRunId). */
export function runIdFromName(name: string | undefined): string | undefined {
  return name?.startsWith(INSTANCE_NAME_PREFIX) ? name : undefined;
}
