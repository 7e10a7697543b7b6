// Text shown in a VS Code notification is parsed for links: `[label](command:id?args)`, `(https://…)` and
// `(file:…)` become clickable (vs/base/common/linkedText.ts). Messages here carry text from hosts, logs, run
// ids and cloud APIs, so a host could plant a `command:` link that runs an extension command with its own
// arguments when clicked. The link syntax needs `]` directly followed by `(`; a zero-width space between them
// keeps the text readable as it was and makes it plain.
const ZWSP = '\u200B';

/** The text with every `[…](…)` link syntax broken, so VS Code renders it as plain text. */
export function notificationSafe(text: string): string {
  return text.replace(/\](?=\s*\()/g, `]${ZWSP}`);
}
