// What linkSafeUi.ts does to the objects VS Code gives out, shown on stand-ins shaped like them: a quick pick
// whose properties are accessors on its prototype (as the extension host's are) and a tree item with plain fields.
// What VS Code receives is link-safe; what the caller reads back is its own text and its own items.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { linkSafeValue, sanitiseOnSet, ShownItems } from '../../../src/features/linkSafeProperties';

const LINK = '[fix](command:workbench.action.terminal.sendSequence?%7B%22text%22%3A%22id%5Cn%22%7D)';
const isLink = (s: string | undefined): boolean => s !== undefined && s.includes('](');

interface Item {
  readonly label: string;
  readonly description?: string;
  readonly detail?: string;
  readonly host?: string;
}

/** Like ExtHostQuickPick: the state lives behind prototype accessors; `sent` is what would go to the renderer. */
class StandInQuickPick {
  sent: { title?: string; items?: readonly Item[]; active?: readonly Item[] } = {};
  get title(): string | undefined {
    return this.sent.title;
  }
  set title(v: string | undefined) {
    this.sent.title = v;
  }
  get items(): readonly Item[] {
    return this.sent.items ?? [];
  }
  set items(v: readonly Item[]) {
    this.sent.items = v;
  }
  get activeItems(): readonly Item[] {
    return this.sent.active ?? [];
  }
  set activeItems(v: readonly Item[]) {
    this.sent.active = v;
  }
}

test('a quick pick gets link-safe title and items; the caller reads back its own items, by identity', () => {
  const qp = new StandInQuickPick();
  const shown = new ShownItems<Item>();
  sanitiseOnSet(qp, 'title', linkSafeValue<string | undefined>);
  for (const key of ['items', 'activeItems'] as const)
    sanitiseOnSet<StandInQuickPick, readonly Item[]>(
      qp,
      key,
      (v) => shown.show(v),
      (v) => shown.back(v),
    );
  const mine: Item[] = [
    { label: `$(server) ${LINK}`, description: LINK, detail: LINK, host: 'h1' },
    { label: 'gpu2', host: 'h2' },
  ];
  qp.title = `Where should ${LINK} run?`;
  qp.items = mine;
  qp.activeItems = [mine[0]!];
  assert.ok(!isLink(qp.sent.title), qp.sent.title);
  for (const it of qp.sent.items ?? []) assert.ok(!isLink(it.label) && !isLink(it.description) && !isLink(it.detail), JSON.stringify(it));
  assert.equal(qp.sent.items?.[0]?.host, 'h1', 'the caller’s own fields travel');
  assert.ok(qp.sent.active?.[0] === qp.sent.items?.[0], 'the active item is one of the items VS Code was given');
  assert.ok(qp.items[0] === mine[0] && qp.activeItems[0] === mine[0], 'the caller gets its own items back');
  assert.equal(qp.sent.items?.[0]?.label.replace(/\u200B/g, ''), mine[0]!.label, 'nothing but the link syntax changes');
});

test('a tree item with plain fields: the constructor’s label and every later label, description and tooltip are link-safe', () => {
  const markdown = { value: 'made by textTooltip' };
  const item: { label?: string; description?: string; tooltip?: string | typeof markdown } = { label: LINK };
  for (const key of ['label', 'description', 'tooltip'] as const) sanitiseOnSet(item, key, linkSafeValue<unknown>);
  assert.ok(!isLink(item.label), item.label);
  item.description = `2 live ${LINK}`;
  item.tooltip = LINK;
  assert.ok(!isLink(item.description) && !isLink(item.tooltip as string));
  item.tooltip = markdown;
  assert.equal(item.tooltip, markdown, 'a MarkdownString (made by the wrappers) passes as it is');
  assert.deepEqual(Object.keys(item).sort(), ['description', 'label', 'tooltip'], 'the fields stay enumerable');
});
