// DOM helpers that only ever put remote strings in as text: no innerHTML anywhere in the webviews.

type Attrs = Readonly<Record<string, string>>;

export function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: ReadonlyArray<Node | string>): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  for (const c of children) node.append(typeof c === 'string' ? document.createTextNode(c) : c);
  return node;
}

/** A toolkit (or any custom) element by tag name, with text children only. */
export function custom(tag: string, attrs: Attrs = {}, ...children: ReadonlyArray<Node | string>): HTMLElement {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  for (const c of children) node.append(typeof c === 'string' ? document.createTextNode(c) : c);
  return node;
}

/** Renders the empty state: a message and buttons for the host's actions. */
export function renderEmpty(
  root: HTMLElement,
  message: string,
  actions: ReadonlyArray<{ readonly id: string; readonly label: string }>,
  onAction: (id: string) => void,
): void {
  root.replaceChildren();
  const box = el('div', { class: 'empty', role: 'status' }, el('p', {}, message));
  for (const a of actions) {
    const b = custom('vscode-button', { 'data-action': a.id }, a.label);
    b.addEventListener('click', () => onAction(a.id));
    box.append(b);
  }
  root.append(box);
}

export function formatNumber(v: number | null | undefined, digits = 1): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return '–';
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(2);
  return v.toFixed(digits);
}
