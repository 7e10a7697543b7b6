// Diagnostics are shown as plain text (the Problems panel, hovers over squiggles, the CLI): a
// markdown `code` span would show its backticks. Field descriptions are written for hovers (markdown),
// so what a message borrows from them goes through here; numbers of things go through plural().

/** `name` → 'name': the description's code spans read as quoted words in plain text. */
export function plain(s: string): string {
  return s.replace(/`([^`]*)`/g, "'$1'").replace(/`/g, "'");
}

/** "1 GPU", "2 GPUs"; `many` for irregular plurals ("1 process", "2 processes"). */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/**
 * A description with its own statement of the range taken out ("Peak learning rate, 1e-8 to 1.
 * 2e-4 is usual …" → "Peak learning rate. 2e-4 is usual …"), for a message that states the range itself.
 */
export function withoutRange(desc: string, min: number | undefined, max: number | undefined): string {
  if (min === undefined || max === undefined) return desc;
  const esc = (n: number): string => String(n).replace(/[.+]/g, (c) => `\\${c}`);
  const re = new RegExp(`,?\\s*(from\\s+)?${esc(min)}\\s*(to|–|-|\\.\\.)\\s*(?:[0-9^e+\\-]|[.,](?=\\d))+`, 'g');
  return desc
    .replace(re, '')
    .replace(/\s*\(\s*\)/g, '')
    .replace(/\s+([.;])/g, '$1')
    .replace(/;\s*\./g, '.')
    .trim();
}
