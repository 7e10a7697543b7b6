// `remote-finetune estimate <finetune.yaml> --gpu <type> [--format text|json]`: the VRAM fit
// estimate behind the editor's CodeLens. Exit 0 when it fits, 1 when it does not, 2 on bad usage.
import { resolve } from 'node:path';
import type { CliCommand } from '../command';
import { parseArgs } from './validate';
import { parseConfigText } from '../../core/config/parse';
import { localFiles } from '../../core/config/nodeFiles';
import { readBoundedSync } from '../../core/config/boundedRead';
import { MAX_CHECKED_BYTES } from '../../core/config/text';
import { cliRoots } from './validate';
import { estimateLabel, estimateRunSpecOrWhy, formatGb } from '../../core/config/runSpecEstimate';
import { runSpecThroughput, throughputLine } from '../../core/config/runSpecThroughput';
import { VRAM_BAND, vramBandText } from '../../core/gpu/vramAccuracy';

const USAGE =
  'usage: remote-finetune estimate <finetune.yaml> --gpu <type> [--format text|json]\n' +
  '  Estimates peak GPU memory (weights, LoRA, gradients, optimizer, activations, overhead) and whether it fits.\n' +
  "  --gpu defaults to the spec's target.gpu. Exit 0 when it fits, 1 when it does not, 2 on bad usage.\n";

export const estimateCommand: CliCommand = {
  name: 'estimate',
  summary: 'estimate GPU memory for a run spec and whether it fits',
  usage: USAGE,
  async run(args, io) {
    const parsed = parseArgs(args, io, USAGE);
    if (typeof parsed === 'number') return parsed;
    if (parsed.paths.length !== 1) {
      io.stderr(`remote-finetune: estimate takes exactly one finetune.yaml\n${USAGE}`);
      return 2;
    }
    const abs = resolve(io.cwd, parsed.paths[0]!);
    const got = readBoundedSync(abs, { cap: MAX_CHECKED_BYTES });
    if (!('text' in got)) {
      io.stderr(`remote-finetune: cannot read '${parsed.paths[0]}'${'refused' in got ? `: ${got.refused}` : ''}\n`);
      return 2;
    }
    const text = got.text;
    const { root } = parseConfigText(text, abs.endsWith('.json') ? 'json' : 'yaml');
    const r = estimateRunSpecOrWhy(root, abs, localFiles(cliRoots(io.cwd, abs)), parsed.gpu);
    if ('reason' in r) {
      io.stderr(`remote-finetune: ${r.message}\n`);
      return 2;
    }
    // Every figure with its band and basis (issue 32.7): the VRAM's and the throughput's held-out errors.
    const tput = runSpecThroughput(r);
    if (parsed.format === 'json') {
      io.stdout(
        `${JSON.stringify({
          gpu: r.gpu.id,
          vramGb: r.gpu.vramGb,
          totalGb: Math.round(r.estimate.totalGib * 100) / 100,
          fits: r.fits,
          band: VRAM_BAND,
          basis: vramBandText(),
          throughput: {
            tokensPerSecond: Math.round(tput.tokensPerSecond),
            low: Math.round(tput.low),
            high: Math.round(tput.high),
            band: tput.band,
            basis: tput.basis,
          },
          model: { params: r.model.params, source: r.model.source },
          trainableParams: r.estimate.trainableParams,
          parts: r.estimate.parts.map((p) => ({ name: p.name, gb: Math.round(p.gib * 100) / 100, source: p.source })),
          advice: r.advice.map((a) => ({ change: a.title, totalGb: Math.round(a.totalGib * 100) / 100 })),
        })}\n`,
      );
    } else {
      const w = Math.max(...r.estimate.parts.map((p) => p.name.length));
      const lines = [
        `${parsed.paths[0]}: ${estimateLabel(r)}`,
        `model: ${(r.model.params / 1e9).toFixed(2)}B parameters (${r.model.source}); trainable ${(r.estimate.trainableParams / 1e6).toFixed(1)}M`,
      ];
      for (const p of r.estimate.parts) lines.push(`  ${p.name.padEnd(w)}  ${formatGb(p.gib).padStart(6)} GB   ${p.source}`);
      lines.push(`  ${'total'.padEnd(w)}  ${formatGb(r.estimate.totalGib).padStart(6)} GB of ${r.gpu.vramGb} GB`);
      for (const a of r.advice) lines.push(`fix: ${a.title} → ≈ ${formatGb(a.totalGib)} GB`);
      lines.push(`throughput: ${throughputLine(tput)}`);
      io.stdout(lines.join('\n') + '\n');
    }
    return r.fits ? 0 : 1;
  },
};
