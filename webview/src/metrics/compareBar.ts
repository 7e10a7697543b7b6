// "Compare…": what adds runs to the charts, folded away until asked for so the charts get the width.
// A run of this extension is picked by the host (its run store); a W&B run is named here.
import type { WandbRunRef } from '../../../src/protocol/metrics';
import { custom, el } from '../shared/dom';
import { setValue, valueOf } from '../shared/toolkit';

export interface CompareBar {
  readonly toggle: HTMLElement;
  readonly root: HTMLElement;
  setError(message: string): void;
  open(): void;
}

export function createCompareBar(last: WandbRunRef | undefined, on: { addOwn(): void; addWandb(ref: WandbRunRef): void }): CompareBar {
  const toggle = custom('vscode-button', { id: 'compare', appearance: 'secondary', 'aria-expanded': 'false', 'aria-controls': 'compareBar' }, 'Compare…');
  const own = custom('vscode-button', { id: 'compareOwn', appearance: 'secondary' }, 'Add a run of this extension…');
  const entity = custom('vscode-text-field', { id: 'wandbEntity', 'aria-label': 'W&B entity' }, 'Entity');
  const project = custom('vscode-text-field', { id: 'wandbProject', 'aria-label': 'W&B project' }, 'Project');
  const runId = custom('vscode-text-field', { id: 'wandbRun', 'aria-label': 'W&B run id' }, 'Run id');
  const load = custom('vscode-button', { id: 'wandbLoad' }, 'Add W&B run');
  const error = el('div', { class: 'error-text', role: 'alert' });
  if (last) {
    setValue(entity, last.entity);
    setValue(project, last.project);
    setValue(runId, last.runId);
  }
  const root = el(
    'div',
    { id: 'compareBar', class: 'compare-bar', role: 'group', 'aria-label': 'Compare with other runs', hidden: '' },
    own,
    el('span', { class: 'or' }, 'or a W&B run:'),
    entity,
    project,
    runId,
    load,
    error,
  );
  const open = (): void => {
    root.hidden = false;
    toggle.setAttribute('aria-expanded', 'true');
  };
  toggle.addEventListener('click', () => {
    if (root.hidden) {
      open();
      (entity as HTMLElement).focus();
    } else {
      root.hidden = true;
      toggle.setAttribute('aria-expanded', 'false');
    }
  });
  own.addEventListener('click', () => on.addOwn());
  const submit = (): void => {
    const ref: WandbRunRef = { entity: valueOf(entity).trim(), project: valueOf(project).trim(), runId: valueOf(runId).trim() };
    if (!ref.entity || !ref.project || !ref.runId) {
      error.textContent = 'Entity, project and run id are all needed.';
      return;
    }
    error.textContent = '';
    on.addWandb(ref);
  };
  load.addEventListener('click', submit);
  for (const f of [entity, project, runId])
    f.addEventListener('keydown', (e) => {
      if ((e as KeyboardEvent).key === 'Enter') submit();
    });
  return {
    toggle,
    root,
    open,
    setError: (m) => {
      error.textContent = m;
      if (m) open();
    },
  };
}
