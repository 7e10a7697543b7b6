// The one HTML shell every panel uses. Scripts run only with this page's nonce (a fresh crypto-random one
// per render), nothing loads from outside the webview's own resource roots, and the page carries no inline
// handlers. style-src also allows inline styles because xterm.js and uPlot set element styles at runtime;
// styles cannot run code, the script policy is what stops injection.
import { randomBytes } from 'node:crypto';

export function makeNonce(): string {
  return randomBytes(18).toString('base64');
}

export interface PanelHtmlParts {
  /** webview.cspSource: the origin the webview serves local resources from. */
  readonly cspSource: string;
  readonly nonce: string;
  readonly title: string;
  readonly scriptUri: string;
  readonly styleUris: readonly string[];
}

function attr(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

export function contentSecurityPolicy(cspSource: string, nonce: string): string {
  return [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src ${cspSource} 'unsafe-inline'`,
    `font-src ${cspSource}`,
    `img-src ${cspSource} data:`,
  ].join('; ');
}

export function panelHtml(p: PanelHtmlParts): string {
  const styles = p.styleUris.map((u) => `<link rel="stylesheet" href="${attr(u)}">`).join('\n    ');
  return `<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta http-equiv="Content-Security-Policy" content="${attr(contentSecurityPolicy(p.cspSource, p.nonce))}">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    ${styles}
    <title>${attr(p.title)}</title>
  </head>
  <body>
    <main id="root" aria-busy="true"></main>
    <script nonce="${attr(p.nonce)}" src="${attr(p.scriptUri)}"></script>
  </body>
</html>`;
}
