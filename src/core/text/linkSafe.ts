// One sanitiser for text that may come from a host, a log, a cloud API or the workspace, before it reaches a
// VS Code surface that parses it: notifications and progress parse `[label](command:id?args)`, `(https://…)`
// and `(file:…)` links (vs/base/common/linkedText.ts), so a host could plant a `command:` link that runs an
// extension command with its own arguments when clicked; hovers and rich tooltips parse all of markdown.
//
// Plain surfaces: the link syntax needs `]` directly followed by `(`; a zero-width space between them keeps the
// text readable as it was and makes it plain. Markdown: every ASCII punctuation character is backslash-escaped
// (CommonMark renders `\X` as X for any of them), so no emphasis, link, autolink (`https\://`), HTML tag,
// entity (`\&`), heading, list or table can start inside the text.
const ZWSP = '\u200B';

/** The text with every `[…](…)` link syntax broken, so VS Code renders it as plain text. */
export function linkSafe(text: string): string {
  return text.replace(/\](?=\s*\()/g, `]${ZWSP}`);
}

declare const SAFE_MARKDOWN: unique symbol;
/** Markdown whose every piece from outside this repository was escaped: what a MarkdownString may be built from. */
export type SafeMarkdown = string & { readonly [SAFE_MARKDOWN]: true };

/**
 * The text as markdown that renders exactly as the text: nothing in it is syntax. Line breaks stay line breaks and
 * a line's leading spaces become no-break spaces (markdown drops them); other control characters become spaces.
 */
export function markdownEscaped(text: string): SafeMarkdown {
  return (
    text
      .replace(/[!-/:-@[-`{-~]/g, '\\$&')
      // eslint-disable-next-line no-control-regex -- control characters are what it replaces
      .replace(/[\u0000-\u0009\u000b\u000c\u000e-\u001f\u007f]/g, ' ')
      .replace(/^ +/gm, (spaces) => '\u00a0'.repeat(spaces.length))
      .replace(/\r\n?|\n/g, '\\\n') as SafeMarkdown
  );
}

/**
 * Markdown written in this repository (a schema's description, a literal with `**bold**`), marked as such.
 * Never for text read from a document, a host, a log or an API: that goes through markdownEscaped.
 */
export function ourMarkdown(text: string): SafeMarkdown {
  return text as SafeMarkdown;
}

/** The pieces joined, each already safe. */
export function joinMarkdown(parts: readonly SafeMarkdown[], separator: '\n' | '\n\n' | ' ' | ', '): SafeMarkdown {
  return parts.join(separator) as SafeMarkdown;
}
