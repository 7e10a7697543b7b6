// When Start Training may first reach a host. A host the person picked (the picker, Run Again) is theirs: its
// GPUs are checked before the confirmation, so a wrong GPU is said before they approve anything. The hosts a
// multi-node spec lists come from a workspace file, which is untrusted: a GPU probe is an SSH connection (auth
// attempts with the person's keys, a host-key prompt), so nothing reaches them until the person has confirmed
// the start that names them.

export interface StartSteps<T> {
  /** The hosts come from the spec (target.hosts), not from the person. */
  readonly hostsFromSpec: boolean;
  /** Reaches the host(s), e.g. the GPU probe; false stops the start. */
  readonly checkHosts: () => Promise<boolean>;
  /** The person's confirmation; undefined when declined. */
  readonly confirm: () => Promise<T | undefined>;
}

/** The confirmation's value when the start goes ahead, undefined when it was declined or the host check said no. */
export async function confirmAndCheckHosts<T>(steps: StartSteps<T>): Promise<T | undefined> {
  if (!steps.hostsFromSpec) return (await steps.checkHosts()) ? await steps.confirm() : undefined;
  const confirmed = await steps.confirm();
  if (confirmed === undefined) return undefined;
  return (await steps.checkHosts()) ? confirmed : undefined;
}
