import type { ProviderKind } from './types';

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
}
