// The spec.json a run starts with carries what its host needs to enforce `budget` on its own (issue 32.6;
// python-runner/remote_finetune/budget.py): the price per hour of this instance and when billing began.
// With those the host counts the spend with VS Code closed; the extension's own cost figures stay as they are.
import { endedAttemptsCost } from '../lifecycle/runAttempts';
import type { RunAttempt } from '../store/runRecord';
import type { RunSpec } from '../../config/runSpecDefaults';

export interface BudgetBilling {
  /** The offer's price for this instance; absent on the user's own SSH host (the spec may name one). */
  readonly pricePerHour?: number;
  /** The launch call of this instance, ms since the epoch: boot and the wait for SSH are billed too. */
  readonly launchedAtMs?: number;
  /** Earlier instances of a spot run: what they cost counts against the same budget. */
  readonly attempts?: readonly RunAttempt[];
}

export function specWithBudgetBilling(spec: Readonly<Record<string, unknown>>, billing: BudgetBilling): Readonly<Record<string, unknown>> {
  const b = spec.budget;
  if (typeof b !== 'object' || b === null || Array.isArray(b)) return spec;
  const budget: Record<string, unknown> = { ...(b as Record<string, unknown>) };
  const price = billing.pricePerHour;
  if (price !== undefined && price > 0) budget.price_per_hour = price;
  if (billing.launchedAtMs !== undefined) {
    // What earlier instances cost moves the start back by as many hours at this price, so the host's one
    // clock (now − billed_since) × price counts the whole run.
    const earlierUsd = endedAttemptsCost(billing.attempts);
    const p = typeof budget.price_per_hour === 'number' && budget.price_per_hour > 0 ? budget.price_per_hour : undefined;
    const earlierS = earlierUsd > 0 && p ? (earlierUsd / p) * 3600 : 0;
    // Milliseconds kept: whole seconds would start the clock up to half a second early and stop the run that much early.
    budget.billed_since = Math.round(billing.launchedAtMs - earlierS * 1000) / 1000;
  }
  return { ...spec, budget };
}

/** The Start confirmation's budget line: what the host will enforce, and whether the estimate is already past it. */
export function budgetLine(
  spec: RunSpec,
  estimate: { readonly costUsd?: number; readonly hours?: number; readonly pricePerHour?: number },
): string | undefined {
  const budget = spec.budget;
  if (!budget) return undefined;
  const maxUsd = budget.max_usd;
  const maxHours = budget.max_hours;
  const price = estimate.pricePerHour ?? budget.price_per_hour;
  const limits = [
    ...(maxUsd !== undefined
      ? [price !== undefined ? `$${maxUsd.toFixed(2)}` : `$${maxUsd.toFixed(2)} (not counted: no price for this host; set budget.price_per_hour)`]
      : []),
    ...(maxHours !== undefined ? [`${maxHours} h`] : []),
  ];
  if (!limits.length) return undefined;
  const over = [
    ...(maxUsd !== undefined && estimate.costUsd !== undefined && estimate.costUsd > maxUsd ? [`about $${estimate.costUsd.toFixed(2)}`] : []),
    ...(maxHours !== undefined && estimate.hours !== undefined && estimate.hours > maxHours ? [`about ${estimate.hours.toFixed(2)} h`] : []),
  ];
  return `Budget: ${limits.join(' or ')}, enforced on the host with VS Code closed (a warning at 80%; at 100% a checkpoint is saved and training stops).${
    over.length ? ` The estimate (${over.join(', ')}) is past it: this run would stop early.` : ''
  }`;
}
