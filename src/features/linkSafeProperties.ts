// The mechanics under linkSafeUi.ts, kept free of `vscode` so they are tested as plain objects: text properties
// of an object VS Code gives out (a quick pick, a status bar item, a tree item) made link-safe whenever they are
// set, and quick pick items shown as link-safe copies while the caller keeps seeing its own items.
import { linkSafe } from '../core/text/linkSafe';

/** Quick pick items: the texts VS Code renders. */
export interface PickItemText {
  readonly label: string;
  readonly description?: string;
  readonly detail?: string;
}

/** A string made link-safe; anything else (a MarkdownString made by linkSafeUi, a label object, undefined) as is. */
export function linkSafeValue<V>(v: V): V {
  return (typeof v === 'string' ? linkSafe(v) : v) as V;
}

/**
 * Replaces `key` on `obj` by an accessor that stores `toShown(value)` through the original property (an
 * accessor on the prototype, as VS Code's objects have, or a plain field) and reads back `fromShown(stored)`.
 */
export function sanitiseOnSet<O extends object, V>(obj: O, key: string & keyof O, toShown: (v: V) => V, fromShown: (v: V) => V = (v) => v): void {
  let d: PropertyDescriptor | undefined;
  for (let o: object | null = obj; o && !d; o = Object.getPrototypeOf(o) as object | null) d = Object.getOwnPropertyDescriptor(o, key);
  let stored = (d && 'value' in d ? d.value : undefined) as V;
  const accessor = d?.get || d?.set ? d : undefined;
  const read = (): V => (accessor?.get ? (accessor.get.call(obj) as V) : stored);
  const write = (v: V): void => {
    if (accessor?.set) accessor.set.call(obj, v);
    else stored = v;
  };
  if (!accessor) write(toShown(stored));
  Object.defineProperty(obj, key, { configurable: true, enumerable: true, get: () => fromShown(read()), set: (v: V) => write(toShown(v)) });
}

/** A link-safe copy of an item (every other field kept: a separator's kind, `picked`, the caller's own data). */
export function linkSafeItem<T extends PickItemText>(item: T): T {
  return {
    ...item,
    label: linkSafe(item.label),
    ...(item.description !== undefined ? { description: linkSafe(item.description) } : {}),
    ...(item.detail !== undefined ? { detail: linkSafe(item.detail) } : {}),
  };
}

/** Items as shown (link-safe copies) and the way back to the caller's own, which it compares and reads fields of. */
export class ShownItems<T extends PickItemText> {
  private readonly own = new Map<T, T>();
  private readonly copy = new Map<T, T>();

  /** The copies to show; remembered, so the caller's items can be found from them and they from its items. */
  show(items: readonly T[]): T[] {
    return items.map((item) => {
      const known = this.copy.get(item);
      if (known) return known;
      const c = linkSafeItem(item);
      this.own.set(c, item);
      this.copy.set(item, c);
      return c;
    });
  }

  /** The caller's items for shown ones (an item not shown by this object is returned as is). */
  back(shown: readonly T[]): T[] {
    return shown.map((s) => this.own.get(s) ?? s);
  }
}
