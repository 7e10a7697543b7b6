// The VRAM estimate part by part, as a markdown page the editor shows beside the run spec (and the
// CodeLens tooltip): small parts in MB, so a 160 MB adapter does not read as "0.2 GB".
import type { RunSpecEstimate } from './runSpecEstimate';
import { estimateLabel, formatGb } from './runSpecEstimate';
import { runSpecThroughput, throughputLine } from './runSpecThroughput';

/** 0.15 GiB → "154 MB", 0.004 GiB → "4.1 MB", 14.07 GiB → "14.1 GB" (the estimate's own GB are GiB). */
export function formatSize(gib: number): string {
  if (gib >= 1) return `${formatGb(gib)} GB`;
  const mb = gib * 1024;
  return `${mb >= 10 ? Math.round(mb) : mb.toFixed(1)} MB`;
}

/** Model ids and config.json paths come from the workspace: shown as text, never as markdown. */
function md(s: string): string {
  return s.replace(/[\\`*_{}[\]()<>#+!|~]/g, (c) => `\\${c}`).replace(/\r?\n/g, ' ');
}

/** One line per part: "LoRA adapters (r=16): 154 MB — how it is estimated". */
export function breakdownLines(e: RunSpecEstimate): string[] {
  return e.estimate.parts.map((p) => `${p.name}: ${formatSize(p.gib)} — ${p.source}`);
}

export function breakdownMarkdown(e: RunSpecEstimate, fileLabel: string): string {
  const x = e.input;
  const billions = (x.model.params / 1e9).toFixed(x.model.params >= 1e10 ? 0 : 1);
  const rows = [...e.estimate.parts].sort((a, b) => b.gib - a.gib).map((p) => `| ${md(p.name)} | ${formatSize(p.gib)} | ${md(p.source)} |`);
  const out = [
    `# GPU memory estimate: ${md(fileLabel)}`,
    '',
    `**${md(estimateLabel(e))}**`,
    '',
    `- Model: ${billions}B parameters (${md(x.model.source)})`,
    `- Method: ${x.method}; batch ${x.batch} × sequence ${x.seqLen}; gradient checkpointing ${x.gradientCheckpointing ? 'on' : 'off'}; optimizer ${md(x.optimizer)}`,
    `- Trainable parameters: ${(e.estimate.trainableParams / 1e6).toFixed(1)} M`,
    `- Training throughput: ${md(throughputLine(runSpecThroughput(e)))}`,
    '',
    '| Part | Memory | How it is estimated |',
    '| --- | ---: | --- |',
    ...rows,
    `| **Total** | **${formatSize(e.estimate.totalGib)}** | of ${e.gpu.vramGb} GB on ${e.gpu.id} |`,
  ];
  if (!e.fits && e.advice.length > 0) out.push('', '## What makes it fit', '', ...e.advice.map((a) => `- ${md(a.title)}: ≈ ${formatSize(a.totalGib)}`));
  return out.join('\n') + '\n';
}
