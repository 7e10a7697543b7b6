// Compare Runs: N runs side by side. A summary (status, duration, cost, host and GPU, git commit, W&B), the
// final metrics, the loss curves overlaid, then the config diff (the spec and the TrainingArguments as used),
// by default only the keys whose values differ. Everything shown came from the runs: text only, never markup.
import type {
  CompareFromWebview,
  CompareModel,
  CompareRunColumn,
  CompareToWebview,
  CompareViewState,
  ConfigDiffRow,
  OpenableFile,
} from '../../../src/protocol/compare';
import { createBridge } from '../shared/vscodeApi';
import { el, formatNumber } from '../shared/dom';
import { seriesColor } from '../shared/chart';
import { oncePerFrame } from '../shared/frame';
import { OverlayChart } from '../metrics/overlayChart';
import type { OverlayRun, Plotted } from '../metrics/overlayChart';
import './compare.css';

const bridge = createBridge<CompareToWebview, CompareFromWebview, CompareViewState>();
let view: CompareViewState = { onlyDiffs: bridge.state()?.onlyDiffs !== false };
const root = document.getElementById('root') ?? document.body;

const FILE_LABELS: ReadonlyArray<readonly [OpenableFile, string, string]> = [
  ['spec-source.yaml', 'spec', 'The spec file as it was when the run started'],
  ['git.diff', 'diff', 'git diff of the synced folder against its commit'],
  ['training_args.json', 'args', 'TrainingArguments as the trainer used them'],
  ['pip-freeze.txt', 'lock', 'pip freeze of the interpreter that trained'],
];

const SECTION_TITLES: Record<ConfigDiffRow['section'], string> = { spec: 'Spec', trainingArgs: 'TrainingArguments (as used)' };

function headRow(runs: readonly CompareRunColumn[], first: string): HTMLTableSectionElement {
  return el(
    'thead',
    {},
    el('tr', {}, el('th', { scope: 'col' }, first), ...runs.map((r) => el('th', { scope: 'col', 'data-run': r.key, title: r.key }, r.name))),
  );
}

function gitCell(r: CompareRunColumn): HTMLElement {
  const g = r.git;
  if (!g) return el('span', { class: 'missing' }, 'not recorded');
  if (!g.repo) return el('span', { class: 'missing' }, 'not a git repository');
  const parts: Array<Node | string> = [el('code', { title: g.commit ?? '' }, g.commit ? g.commit.slice(0, 10) : 'no commit')];
  if (g.branch) parts.push(` ${g.branch}`);
  if (g.dirty !== undefined) parts.push(' ', el('span', { class: g.dirty ? 'dirty' : 'clean' }, g.dirty ? 'dirty' : 'clean'));
  if (g.untracked > 0) parts.push(` · ${g.untracked} untracked`);
  if (g.note) parts.push(el('div', { class: 'note' }, g.note));
  return el('span', {}, ...parts);
}

function wandbCell(r: CompareRunColumn): HTMLElement {
  if (r.hasWandbPage) {
    const b = el(
      'button',
      { type: 'button', class: 'link', 'data-open': 'wandb', title: 'Open the W&B run in the browser' },
      r.wandbRunId ? `W&B ${r.wandbRunId}` : 'W&B run',
    );
    b.addEventListener('click', () => bridge.post({ type: 'openWandb', run: r.key }));
    return b;
  }
  return el('span', { class: 'missing' }, r.wandbRunId ? r.wandbRunId : '–');
}

function filesCell(r: CompareRunColumn): HTMLElement {
  const box = el('span', { class: 'files' });
  for (const [file, label, title] of FILE_LABELS) {
    if (!r.files.includes(file)) continue;
    const b = el('button', { type: 'button', class: 'link', 'data-file': file, title }, label);
    b.addEventListener('click', () => bridge.post({ type: 'openFile', run: r.key, file }));
    box.append(b);
  }
  if (!box.childNodes.length) box.append(el('span', { class: 'missing' }, '–'));
  return box;
}

/** One summary row: a label and a cell per run; differing plain values are marked. */
function summaryRow(label: string, id: string, runs: readonly CompareRunColumn[], cell: (r: CompareRunColumn) => Node | string): HTMLTableRowElement {
  const cells = runs.map((r) => {
    const c = cell(r);
    return el('td', { 'data-run': r.key }, c);
  });
  const texts = cells.map((c) => c.textContent ?? '');
  const row = el('tr', { 'data-row': id }, el('th', { scope: 'row' }, label), ...cells);
  if (texts.some((t) => t !== texts[0])) row.classList.add('differs');
  return row;
}

function renderSummary(m: CompareModel): HTMLElement {
  const runs = m.runs;
  const started = (r: CompareRunColumn): string => {
    const t = Date.parse(r.createdAt);
    return Number.isFinite(t) ? new Date(t).toLocaleString() : r.createdAt;
  };
  const body = el(
    'tbody',
    {},
    summaryRow('Status', 'status', runs, (r) => r.status),
    summaryRow('Started', 'started', runs, started),
    summaryRow('Duration', 'duration', runs, (r) => r.duration ?? '–'),
    summaryRow('Cost', 'cost', runs, (r) => (r.costUsd !== undefined ? `$${r.costUsd.toFixed(2)}` : '–')),
    summaryRow('Host', 'host', runs, (r) => [r.provider, r.host].filter(Boolean).join(' · ')),
    summaryRow('GPU', 'gpu', runs, (r) => r.gpu ?? '–'),
    summaryRow('Git', 'git', runs, gitCell),
    summaryRow('W&B', 'wandb', runs, wandbCell),
    summaryRow('Files', 'files', runs, filesCell),
  );
  return el('table', { class: 'compare summary', 'aria-label': 'Runs' }, headRow(runs, 'Run'), body);
}

function renderMetrics(m: CompareModel): HTMLElement {
  if (m.metrics.length === 0) return el('p', { class: 'placeholder' }, 'No final metrics yet: they are recorded when a run ends.');
  const rows = m.metrics.map((row) => {
    const tr = el(
      'tr',
      { 'data-metric': row.key },
      el('th', { scope: 'row' }, row.key),
      ...row.values.map((v, i) =>
        el(
          'td',
          { class: v === null ? 'num missing' : 'num', 'data-run': m.runs[i]?.key ?? '' },
          v === null ? '–' : Number.isInteger(v) ? String(v) : formatNumber(v, 4),
        ),
      ),
    );
    if (row.values.some((v) => v !== row.values[0])) tr.classList.add('differs');
    return tr;
  });
  return el('table', { class: 'compare metrics', 'aria-label': 'Final metrics' }, headRow(m.runs, 'Final metric'), el('tbody', {}, ...rows));
}

function renderConfig(m: CompareModel): HTMLElement {
  const box = el('div', { class: 'config' });
  for (const section of ['spec', 'trainingArgs'] as const) {
    const rows = m.config.filter((r) => r.section === section);
    const differing = rows.filter((r) => r.differs).length;
    box.append(el('h3', {}, `${SECTION_TITLES[section]}: ${differing} of ${rows.length} keys differ`));
    if (rows.length === 0) {
      box.append(
        el(
          'p',
          { class: 'placeholder' },
          section === 'spec' ? 'No spec recorded for these runs.' : 'No TrainingArguments recorded (own scripts, or runs that ended before training).',
        ),
      );
      continue;
    }
    const shown = view.onlyDiffs ? rows.filter((r) => r.differs) : rows;
    const body = el(
      'tbody',
      {},
      ...shown.map((r) =>
        el(
          'tr',
          { class: r.differs ? 'differs' : 'same', 'data-key': r.key },
          el('th', { scope: 'row' }, el('code', {}, r.key)),
          ...r.values.map((v, i) => el('td', { class: v === null ? 'missing' : '', 'data-run': m.runs[i]?.key ?? '' }, v === null ? 'not set' : v)),
        ),
      ),
    );
    box.append(el('table', { class: 'compare diff', 'data-section': section, 'aria-label': SECTION_TITLES[section] }, headRow(m.runs, 'Key'), body));
  }
  return box;
}

class CompareApp {
  private model: CompareModel | undefined;
  private readonly charts = [
    new OverlayChart('loss', 'Training loss', 'No training loss logged by these runs.'),
    new OverlayChart('eval_loss', 'Eval loss', 'No eval loss logged by these runs.'),
  ];
  private readonly chartsEl = el('div', { class: 'charts' }, ...this.charts.map((c) => c.root));
  private readonly summaryEl = el('section', { class: 'summary' });
  private readonly metricsEl = el('section', { class: 'final' });
  private readonly configEl = el('section', { class: 'configs' });
  readonly schedule = oncePerFrame(() => this.drawCharts());

  constructor() {
    const only = el('input', { type: 'checkbox', id: 'onlyDiffs' });
    only.checked = view.onlyDiffs;
    only.addEventListener('change', () => {
      view = { onlyDiffs: only.checked };
      bridge.saveState(view);
      this.renderConfig();
    });
    root.replaceChildren(
      el(
        'main',
        { class: 'compare-runs' },
        el('h2', {}, 'Runs'),
        this.summaryEl,
        el('h2', {}, 'Final metrics'),
        this.metricsEl,
        el('h2', {}, 'Loss'),
        this.chartsEl,
        el('div', { class: 'toolbar' }, el('h2', {}, 'Config'), el('label', { for: 'onlyDiffs' }, only, ' Only keys that differ')),
        this.configEl,
      ),
    );
    this.summaryEl.append(el('p', { class: 'placeholder' }, 'Loading the runs…'));
    new ResizeObserver(() => this.schedule()).observe(this.chartsEl);
  }

  show(m: CompareModel): void {
    this.model = m;
    this.summaryEl.replaceChildren(renderSummary(m));
    this.metricsEl.replaceChildren(renderMetrics(m));
    this.renderConfig();
    this.schedule();
  }

  private renderConfig(): void {
    if (this.model) this.configEl.replaceChildren(renderConfig(this.model));
  }

  private drawCharts(): void {
    const m = this.model;
    for (const chart of this.charts) {
      const runs: OverlayRun[] = [];
      m?.runs.forEach((r, i) => {
        const c = m.curves.find((x) => x.run === r.key && x.metric === chart.metric);
        if (c) runs.push({ key: r.key, name: r.name, color: seriesColor(i), xs: c.steps, raw: c.values });
      });
      chart.resize(chart.root.clientWidth - 4);
      chart.update(runs);
    }
  }

  plotted(metric: string): Plotted | undefined {
    return this.charts.find((c) => c.metric === metric)?.plotted;
  }
}

const app = new CompareApp();
// Read by the panel tests: what the charts were given (a canvas cannot be read back).
(window as unknown as { __comparePanel: { plotted(m: string): Plotted | undefined } }).__comparePanel = { plotted: (m) => app.plotted(m) };

bridge.start((m) => {
  if (m.type === 'compare') app.show(m.model);
});
