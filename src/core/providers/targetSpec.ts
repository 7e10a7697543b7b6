import type { ProviderKind } from './provider';

/** The parts of finetune.yaml's `target` the providers and the run lifecycle read. */
export interface TargetSpec {
  readonly provider: ProviderKind;
  readonly host?: string;
  readonly gpu?: string;
  readonly gpu_count?: number;
  readonly spot?: boolean;
  readonly region?: string;
  readonly zone?: string;
  readonly instance_type?: string;
  /** Boot disk of a provisioned instance, GB. */
  readonly disk_gb?: number;
  /** More regions whose zones a launch may try once the first region's have refused. */
  readonly regions?: readonly string[];
  /** EC2: the instance profile (name or ARN) the instance runs as. */
  readonly iam_instance_profile?: string;
  /** GCP: the service account email the VM runs as (default: the project's default compute account). */
  readonly service_account?: string;
  /** EC2 spot: who brings a reclaimed run back, the extension (a replacement instance) or EC2 itself (same instance). */
  readonly spot_recovery?: 'extension' | 'cloud';
  readonly spot_hibernate?: boolean;
}
