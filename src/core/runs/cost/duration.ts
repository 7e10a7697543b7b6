// How long something took or will take, in the words every run surface uses (Runs rows, tooltips, Compare,
// estimated vs actual, "≈ T left"): one file, so no two places round or pad differently.

/** "45s", "3m 12s", "1h 04m". */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h ${String(m % 60).padStart(2, '0')}m`;
}
