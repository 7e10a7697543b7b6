import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { contentSecurityPolicy, makeNonce, panelHtml } from '../../../src/core/webview/webviewHtml';

test('CSP: default-src none, scripts only with the nonce, resources only from the webview source', () => {
  const csp = contentSecurityPolicy('https://file+.vscode-resource.vscode-cdn.net', 'abc');
  assert.match(csp, /^default-src 'none'; /);
  assert.match(csp, /script-src 'nonce-abc'(;|$)/);
  assert.ok(!/script-src[^;]*(unsafe|https?:|\*)/.test(csp), 'no other script source');
  assert.ok(!csp.includes('connect-src'), 'the page fetches nothing (default-src none covers it)');
});

test('nonces are fresh crypto-random strings', () => {
  const seen = new Set<string>();
  for (let i = 0; i < 1000; i++) seen.add(makeNonce());
  assert.equal(seen.size, 1000);
  for (const n of seen) assert.ok(Buffer.from(n, 'base64').length >= 16);
});

test('the shell carries the nonce on its one script, no inline handlers or inline script, and escapes what it interpolates', () => {
  const html = panelHtml({
    cspSource: 'vscode-resource:',
    nonce: 'N0nce+/=',
    title: '"><script>alert(1)</script>',
    scriptUri: 'vscode-resource:/dist/webview/log.js?a"b',
    styleUris: ['vscode-resource:/media/panels.css'],
  });
  const scripts = html.match(/<script\b[^>]*>/g) ?? [];
  assert.equal(scripts.length, 1);
  assert.match(scripts[0]!, /nonce="N0nce\+\/="/);
  assert.ok(/<script[^>]*><\/script>/.test(html), 'the script element has no inline body');
  assert.ok(!/\son[a-z]+\s*=/i.test(html), 'no inline event handlers');
  assert.ok(!html.includes('<script>alert'), 'the title is escaped');
  assert.ok(html.includes('log.js?a&quot;b'));
});
