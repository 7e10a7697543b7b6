// Webview panels live in nested iframes; these find the frame whose document shows some text.
import type { Frame, Page } from 'playwright-core';

export async function frameWithText(page: Page, text: string | RegExp, timeoutMs = 60_000): Promise<Frame> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    for (const f of page.frames()) {
      try {
        const body = await f.evaluate(() => document.body?.innerText ?? '');
        if (typeof text === 'string' ? body.includes(text) : text.test(body)) return f;
      } catch {
        /* a frame that navigated away */
      }
    }
    if (Date.now() > deadline) throw new Error(`no frame shows ${String(text)} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** Clicks the first button of a modal dialog whose label matches. */
export async function clickDialogButton(page: Page, label: RegExp, timeoutMs = 30_000): Promise<string> {
  const button = page
    .locator('.monaco-dialog-box .dialog-buttons a.monaco-button, .monaco-dialog-box .dialog-buttons .monaco-button', { hasText: label })
    .first();
  await button.waitFor({ timeout: timeoutMs });
  const text = await button.innerText();
  await button.click();
  return text;
}

/** Waits for a notification toast whose text matches and returns its text. */
export async function waitForNotification(page: Page, text: RegExp, timeoutMs = 120_000): Promise<string> {
  const toast = page.locator('.notifications-toasts .notification-toast', { hasText: text }).first();
  await toast.waitFor({ timeout: timeoutMs });
  return toast.innerText();
}
