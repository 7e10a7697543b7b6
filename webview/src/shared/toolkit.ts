// Registers only the toolkit components the panels use (each register call adds to the bundle).
import {
  provideVSCodeDesignSystem,
  vsCodeButton,
  vsCodeCheckbox,
  vsCodeDropdown,
  vsCodeOption,
  vsCodeTextField,
  vsCodeProgressRing,
} from '@vscode/webview-ui-toolkit';

export function registerToolkit(): void {
  provideVSCodeDesignSystem().register(vsCodeButton(), vsCodeCheckbox(), vsCodeDropdown(), vsCodeOption(), vsCodeTextField(), vsCodeProgressRing());
}

/** Value of a toolkit text field or dropdown (their `value` property mirrors the native inputs). */
export function valueOf(node: HTMLElement): string {
  const v = (node as HTMLElement & { value?: unknown }).value;
  return typeof v === 'string' ? v : '';
}

export function setValue(node: HTMLElement, value: string): void {
  (node as HTMLElement & { value: string }).value = value;
}
