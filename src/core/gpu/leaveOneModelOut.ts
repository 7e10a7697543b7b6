// Held out means held out: a fit on every case, and for each model a fit on the other models' cases only, so each
// case can be predicted by a fit that never saw a case of its model (throughputModel.ts, vramFit.ts).

export interface ModelFolds<K> {
  /** The fit on every case (in sample). */
  readonly all: K;
  /** The fit without any case of `model`. */
  readonly without: (model: string) => K;
}

export function leaveOneModelOut<C extends { readonly model: string }, K>(cases: readonly C[], fit: (cases: readonly C[]) => K): ModelFolds<K> {
  const all = fit(cases);
  const byModel = new Map<string, K>();
  for (const model of new Set(cases.map((c) => c.model))) byModel.set(model, fit(cases.filter((c) => c.model !== model)));
  return {
    all,
    without: (model) => {
      const k = byModel.get(model);
      if (k === undefined) throw new Error(`no case of ${model}`);
      return k;
    },
  };
}
