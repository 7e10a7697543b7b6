// The servers the person approved to receive a stored token, per token, in the extension's user state (global,
// never the workspace's). The W&B list is the one the Training Metrics panel keeps for its own W&B requests: the
// same key to the same server is one decision, whichever feature asked first.
import type { HeldSecrets } from '../lifecycle/runEnv';

/** vscode.Memento's part that is used here (globalState in the extension, a Map in tests). */
export interface ApprovalState {
  get<T>(key: string, defaultValue: T): T;
  update(key: string, value: unknown): PromiseLike<void>;
}

export const APPROVED_WANDB_ORIGINS = 'remoteFinetune.wandb.approvedOrigins';

function keyOf(secret: string): string {
  if (secret === 'WANDB_API_KEY') return APPROVED_WANDB_ORIGINS;
  if (secret === 'HF_TOKEN') return 'remoteFinetune.hf.approvedOrigins';
  return `remoteFinetune.approvedOrigins.${secret}`;
}

export function isOriginApproved(state: ApprovalState, secret: string, origin: string): boolean {
  const list = state.get<unknown>(keyOf(secret), []);
  return Array.isArray(list) && list.includes(origin);
}

/** Remembers every held token's origin: after this, runEnv sends them there without asking. */
export async function approveHeld(state: ApprovalState, held: readonly HeldSecrets[]): Promise<void> {
  for (const h of held)
    for (const secret of h.secrets) {
      if (isOriginApproved(state, secret, h.redirect.origin)) continue;
      const list = state.get<unknown>(keyOf(secret), []);
      await state.update(keyOf(secret), [...(Array.isArray(list) ? list : []), h.redirect.origin]);
    }
}
