// Messages every panel shares. The webview speaks first ("ready"); the host posts nothing before it,
// so no message is lost to a page that has not attached its listener yet.

/** Sent by the webview once its listener is attached; carries what getState() had, for the host's replay. */
export interface ReadyMessage {
  readonly type: 'ready';
}

/** What a panel shows when it has nothing live to show. */
export interface EmptyStateMessage {
  readonly type: 'empty';
  /** Plain text, rendered with textContent. */
  readonly message: string;
  /** Command-like actions the webview offers as buttons; the host decides what each does. */
  readonly actions: readonly PanelAction[];
}

export interface PanelAction {
  readonly id: 'openLocalFile' | 'startRun';
  readonly label: string;
}

/** The webview asks the host to run one of the empty state's actions. */
export interface ActionMessage {
  readonly type: 'action';
  readonly id: PanelAction['id'];
}

/** Where a panel's data comes from; stored in the webview state so a reload reattaches to the same source. */
export type SourceDescriptor = { readonly kind: 'active' } | { readonly kind: 'local'; readonly path: string };

/** Upper bound on any single string the host accepts from a webview (copy of a whole screen of log). */
export const MAX_WEBVIEW_TEXT = 8 * 1024 * 1024;
