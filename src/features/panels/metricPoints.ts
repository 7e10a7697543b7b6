// events.jsonl → the metrics panel's points. Only numbers travel; names of extra metrics are the user's
// own and are rendered as text in the webview. Values live in null-prototype objects: a metric named
// `__proto__` is then a value like any other, not a prototype to set.
import type { RunEvent } from '../../core/telemetry/events';
import type { MetricPoint } from '../../protocol/metrics';

export function eventsToPoints(events: readonly RunEvent[]): MetricPoint[] {
  const out: MetricPoint[] = [];
  for (const e of events) {
    if (e.type === 'metrics') {
      const values: Record<string, number> = Object.create(null) as Record<string, number>;
      if (e.loss !== undefined) values.loss = e.loss;
      if (e.learning_rate !== undefined) values.learning_rate = e.learning_rate;
      if (e.grad_norm !== undefined) values.grad_norm = e.grad_norm;
      if (e.tokens_per_second !== undefined) values.tokens_per_second = e.tokens_per_second;
      if (e.epoch !== undefined) values.epoch = e.epoch;
      if (e.samples_per_second !== undefined) values.samples_per_second = e.samples_per_second;
      if (e.peak_gpu_memory_mb !== undefined) values.peak_gpu_memory_mb = e.peak_gpu_memory_mb;
      for (const [k, v] of Object.entries(e.extra ?? {})) values[k] = v;
      out.push({ step: e.step, values });
    } else if (e.type === 'eval') {
      const values: Record<string, number> = Object.create(null) as Record<string, number>;
      if (e.eval_loss !== undefined) values.eval_loss = e.eval_loss;
      // perplexity = exp(eval_loss) by definition: an own script's eval (parsed from its log) gets the figure too.
      const ppl = e.perplexity ?? (e.eval_loss !== undefined ? Math.exp(e.eval_loss) : undefined);
      if (ppl !== undefined && Number.isFinite(ppl)) values.perplexity = ppl;
      for (const [k, v] of Object.entries(e.metrics ?? {})) values[k.startsWith('eval') ? k : `eval_${k}`] = v;
      out.push({ step: e.step, values });
    }
  }
  return out;
}

/** Run name and state as the events tell them. */
export function runStateFromEvents(events: readonly RunEvent[], fallbackName: string): { name: string; state: string } {
  let name = fallbackName;
  let state = 'running';
  for (const e of events) {
    if (e.type === 'started') name = e.run_id ?? e.model;
    if (e.type === 'finished') state = e.status;
    if (e.type === 'error') state = 'failing';
  }
  return { name, state };
}
