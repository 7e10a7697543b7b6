// The numbers at the top of the panel, one row per run: where each run is now, as a tracker's run table
// shows it, before anyone reads a curve.
import { PRIMARY_RUN } from '../../../src/protocol/metrics';
import { el, formatNumber } from '../shared/dom';
import { custom } from '../shared/dom';
import type { RunSeries } from './runSeries';

const COLUMNS: ReadonlyArray<{ key: string; title: string; digits: number }> = [
  { key: 'loss', title: 'Loss', digits: 4 },
  { key: 'eval_loss', title: 'Eval loss', digits: 4 },
  // exp(eval_loss), from the eval events: the figure a person compares adapters by.
  { key: 'perplexity', title: 'Perplexity', digits: 3 },
  { key: 'learning_rate', title: 'Learning rate', digits: 6 },
  { key: 'grad_norm', title: 'Grad norm', digits: 3 },
  { key: 'tokens_per_second', title: 'Tokens/s', digits: 0 },
  { key: 'epoch', title: 'Epoch', digits: 2 },
];

export interface LatestActions {
  openPage(key: string): void;
  remove(key: string): void;
}

export function renderLatest(table: HTMLTableElement, runs: readonly RunSeries[], actions: LatestActions): void {
  const head = el(
    'tr',
    {},
    el('th', { scope: 'col' }, 'Run'),
    el('th', { scope: 'col' }, 'Step'),
    ...COLUMNS.map((c) => el('th', { scope: 'col' }, c.title)),
    el('th', { scope: 'col' }, 'State'),
    el('th', { scope: 'col' }, el('span', { class: 'visually-hidden' }, 'Actions')),
  );
  const rows = runs.map((r) => {
    const swatch = el('span', { class: 'swatch', 'aria-hidden': 'true' });
    swatch.style.background = r.color;
    const cells = COLUMNS.map((c) => {
      const v = r.latest.get(c.key);
      const at = r.latestStep.get(c.key);
      // An eval loss from an earlier step says so: it is not the loss of the step shown in the row.
      const note = v !== undefined && at !== undefined && at !== r.lastStep ? ` @${at}` : '';
      return el('td', { 'data-key': c.key, class: 'num' }, v === undefined ? '–' : `${formatNumber(v, c.digits)}${note}`);
    });
    const buttons = el('td', { class: 'row-actions' });
    if (r.info.hasPage) {
      const open = custom(
        'vscode-button',
        { appearance: 'icon', title: 'Open the run page', 'aria-label': `Open the run page of ${r.info.name}`, 'data-action': 'open' },
        '↗',
      );
      open.addEventListener('click', () => actions.openPage(r.info.key));
      buttons.append(open);
    }
    if (r.info.key !== PRIMARY_RUN) {
      const remove = custom(
        'vscode-button',
        { appearance: 'icon', title: 'Take off the charts', 'aria-label': `Remove ${r.info.name} from the charts`, 'data-action': 'remove' },
        '×',
      );
      remove.addEventListener('click', () => actions.remove(r.info.key));
      buttons.append(remove);
    }
    const name = el('th', { scope: 'row', class: 'run-name' }, swatch, r.info.name);
    const state = el('td', { class: 'state' }, `${r.info.source === 'wandb' ? 'W&B' : 'events.jsonl'} · ${r.info.state}`);
    if (r.error) state.append(el('div', { class: 'error-text', role: 'alert' }, r.error));
    return el(
      'tr',
      { 'data-run': r.info.key },
      name,
      el('td', { 'data-key': 'step', class: 'num' }, r.lastStep === undefined ? '–' : String(r.lastStep)),
      ...cells,
      state,
      buttons,
    );
  });
  const body = rows.length
    ? rows
    : [
        el(
          'tr',
          {},
          el('td', { colspan: String(COLUMNS.length + 4), class: 'placeholder' }, 'No data yet: the run’s first metrics appear here as soon as it logs them.'),
        ),
      ];
  table.replaceChildren(el('thead', {}, head), el('tbody', {}, ...body));
}
