// EC2 recovering a spot run by itself (target.spot_recovery: cloud), so no client has to be up when capacity
// returns. RunInstances opens a persistent spot request whose interruption behaviour is stop (or hibernate):
// EC2 stops the instance on an interruption and starts the same instance, root volume intact, once capacity is
// back ("Only Amazon EC2 can restart an interrupted stopped Spot Instance", the interruption-behavior page).
// The price of that: a persistent request relaunches whatever ends its instance, so the request must be
// cancelled before the instance is terminated ("make sure you cancel the Spot request before you terminate
// the Spot Instance"), by teardown and by the orphan sweep alike.
import type * as Ec2Sdk from '@aws-sdk/client-ec2';
import type { LaunchRequest } from '../provider';

/**
 * Families EC2 hibernates (the hibernation prerequisites page). No GPU family is among them, so a GPU spot run
 * that asks for hibernate is stopped instead, and says so.
 */
const HIBERNATE_FAMILIES = new Set([
  'm3',
  'm4',
  'm5',
  'm5a',
  'm5ad',
  'm5d',
  'm6a',
  'm6i',
  'm6id',
  'm7a',
  'm7i',
  'm7i-flex',
  't2',
  't3',
  't3a',
  'c3',
  'c4',
  'c5',
  'c5d',
  'c6a',
  'c6i',
  'c6id',
  'c7a',
  'c7i',
  'r3',
  'r4',
  'r5',
  'r5a',
  'r5ad',
  'r5d',
  'r6a',
  'r6i',
  'r7a',
  'r7i',
  'i3',
  'i3en',
]);

export function hibernationSupported(instanceType: string): boolean {
  return HIBERNATE_FAMILIES.has(instanceType.split('.')[0] ?? '');
}

export interface SpotLaunchOptions {
  readonly InstanceMarketOptions?: Ec2Sdk.InstanceMarketOptionsRequest;
  readonly HibernationOptions?: Ec2Sdk.HibernationOptionsRequest;
  /**
   * With a persistent request a guest power-off (the idle watchdog) must stop, not terminate: a terminated
   * instance is replaced by the request, a new machine billing with no run on it.
   */
  readonly InstanceInitiatedShutdownBehavior: 'stop' | 'terminate';
  /** Why the launch differs from what the spec asked (hibernate refused for the type). */
  readonly note?: string;
}

/** The spot part of RunInstances for a launch: one-time and terminate, or persistent with stop/hibernate. */
export function spotLaunchOptions(request: Pick<LaunchRequest, 'spot' | 'spotRecovery' | 'spotHibernate' | 'instanceType'>): SpotLaunchOptions {
  if (!request.spot) return { InstanceInitiatedShutdownBehavior: 'terminate' };
  if (request.spotRecovery !== 'cloud')
    return {
      InstanceMarketOptions: { MarketType: 'spot', SpotOptions: { SpotInstanceType: 'one-time', InstanceInterruptionBehavior: 'terminate' } },
      InstanceInitiatedShutdownBehavior: 'terminate',
    };
  const hibernate = request.spotHibernate === true && hibernationSupported(request.instanceType);
  return {
    InstanceMarketOptions: {
      MarketType: 'spot',
      SpotOptions: { SpotInstanceType: 'persistent', InstanceInterruptionBehavior: hibernate ? 'hibernate' : 'stop' },
    },
    // Hibernation must be configured at launch, and then the interruption behaviour must be hibernate (botocore's model).
    ...(hibernate ? { HibernationOptions: { Configured: true } } : {}),
    InstanceInitiatedShutdownBehavior: 'stop',
    ...(request.spotHibernate && !hibernate
      ? { note: `EC2 does not hibernate ${request.instanceType} (no GPU family is in its hibernation list): it is stopped on an interruption instead` }
      : {}),
  };
}

/** Whether a launch opens a persistent request (its instance is then tagged and cancelled with it). */
export function opensPersistentRequest(request: Pick<LaunchRequest, 'spot' | 'spotRecovery'>): boolean {
  return request.spot && request.spotRecovery === 'cloud';
}

type Send = <T>(make: (sdk: typeof Ec2Sdk) => object, signal?: AbortSignal) => Promise<T>;

/**
 * Cancels the spot request so that EC2 does not start or relaunch its instance again. Cancelling does not
 * terminate the instance; a request EC2 no longer knows needs nothing more.
 */
export async function cancelSpotRequest(send: Send, requestId: string, signal?: AbortSignal): Promise<void> {
  try {
    await send((sdk) => new sdk.CancelSpotInstanceRequestsCommand({ SpotInstanceRequestIds: [requestId] }), signal);
  } catch (err) {
    if (!(err instanceof Error && err.message.startsWith('InvalidSpotInstanceRequestID.NotFound'))) throw err;
  }
}
