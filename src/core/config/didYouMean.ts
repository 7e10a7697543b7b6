// "Did you mean …" for unknown keys and enum values: the closest candidate by edit distance,
// only when it is close enough to be a plausible typo.

export function editDistance(a: string, b: string, cap = 64): number {
  if (a === b) return 0;
  if (Math.abs(a.length - b.length) > cap) return cap + 1;
  let prev = new Array<number>(b.length + 1);
  let cur = new Array<number>(b.length + 1);
  for (let j = 0; j <= b.length; j++) prev[j] = j;
  for (let i = 1; i <= a.length; i++) {
    cur[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a.charCodeAt(i - 1) === b.charCodeAt(j - 1) ? 0 : 1;
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + cost);
      // Transposition (Damerau): "laerning" is one typo, not two.
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) cur[j] = Math.min(cur[j]!, (prev[j - 2] ?? Infinity) + 1);
    }
    [prev, cur] = [cur, prev];
  }
  return prev[b.length]!;
}

export function closest(word: string, candidates: Iterable<string>): string | undefined {
  const w = word.toLowerCase();
  let best: string | undefined;
  let bestD = Infinity;
  for (const c of candidates) {
    const cl = c.toLowerCase();
    let d = editDistance(w, cl);
    // A separator difference (lora-alpha vs lora_alpha, learningRate vs learning_rate) is no typo at all.
    if (w.replace(/[-_]/g, '') === cl.replace(/[-_]/g, '')) d = 0.5;
    if (d < bestD) {
      bestD = d;
      best = c;
    }
  }
  if (best === undefined) return undefined;
  const limit = Math.max(2, Math.floor(best.length / 3));
  return bestD <= limit ? best : undefined;
}
