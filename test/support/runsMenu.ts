// The Runs view's context menu as VS Code evaluates it: package.json's view/item/context entries for the view,
// each offered when every `viewItem =~ /…/` clause of its `when` matches the item's contextValue.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const pkg = JSON.parse(readFileSync(join(__dirname, '../../package.json'), 'utf8')) as {
  contributes: { menus: Record<string, Array<{ command: string; when?: string }>> };
};
const runsMenu = (pkg.contributes.menus['view/item/context'] ?? []).filter((m) => /view == remoteFinetune\.runs/.test(m.when ?? ''));

/** The commands the menu shows on an item with this contextValue. */
export function runsMenuOffers(contextValue: string): Set<string> {
  const out = new Set<string>();
  for (const m of runsMenu) {
    const clauses = [...(m.when ?? '').matchAll(/viewItem =~ \/((?:\\\/|[^/])+)\//g)].map((x) => new RegExp(x[1]!));
    if (clauses.length > 0 && clauses.every((re) => re.test(contextValue))) out.add(m.command);
  }
  return out;
}
