/**
 * Preference tuning (method dpo or orpo) as the estimates see it. Such a run trains a LoRA adapter on a 16-bit or
 * 4-bit base, named by preference.base_method (default lora-bf16, as python-runner's trainer_plan.base_method), so
 * memory and speed are the base method's with two differences:
 * - every example is two sequences (chosen and rejected, which TRL runs through the model in one batch), so
 *   activations and trained tokens are twice an SFT example's at the same per-device batch;
 * - DPO also scores both with the reference model. Under LoRA that reference is the base with the adapter switched
 *   off (TRL's PEFT path): no second copy of the weights, only one more forward pass without gradients, about a
 *   third of a training step's compute. ORPO has no reference model.
 */
export type PreferenceMethod = 'dpo' | 'orpo';
export type PreferenceBase = 'qlora' | 'lora-bf16';

export function isPreferenceMethod(method: unknown): method is PreferenceMethod {
  return method === 'dpo' || method === 'orpo';
}

/** The base method a preference run trains on, or undefined for any other method. */
export function preferenceBase(method: unknown, baseMethod: unknown): PreferenceBase | undefined {
  if (!isPreferenceMethod(method)) return undefined;
  return baseMethod === 'qlora' ? 'qlora' : 'lora-bf16';
}

/** Sequences through the model per example: the per-device batch's activations scale by this. */
export function preferenceSequencesPerExample(method: unknown): number {
  return isPreferenceMethod(method) ? 2 : 1;
}

/** Compute per example relative to an SFT example of the same length (training passes plus DPO's reference pass). */
export function preferenceComputeFactor(method: unknown): number {
  if (method === 'dpo') return 2 * (1 + 1 / 3);
  return preferenceSequencesPerExample(method);
}
