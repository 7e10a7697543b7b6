// Small helpers for driving the VS Code workbench in Chromium the way a person does.
import type { Browser, Page } from 'playwright-core';
import { clickDialogButton } from './frames';

export async function waitForWorkbench(page: Page): Promise<void> {
  await page.locator('.monaco-workbench').waitFor({ timeout: 90_000 });
  await page.locator('.monaco-workbench .part.statusbar').waitFor({ timeout: 90_000 });
  // Remote extensions register after the workbench shows; our activity bar entry says they have.
  await page.locator('.monaco-workbench .activitybar [aria-label^="Fine-Tune"]').first().waitFor({ timeout: 90_000 });
}

/** A new page on the workbench of `folder` at the size the screenshots are taken at, closed when `fn` ends. */
export async function onWorkbench<T>(browser: Browser, url: string, folder: string, fn: (page: Page) => Promise<T>): Promise<T> {
  const page = await browser.newPage({ viewport: { width: 1500, height: 950 } });
  try {
    await page.goto(`${url}?folder=${encodeURIComponent(folder)}`);
    await waitForWorkbench(page);
    return await fn(page);
  } finally {
    await page.close();
  }
}

/**
 * Opens the command palette, types the command's title, and runs it. The palette computes its list
 * when it opens, so a command registered a moment later needs the palette reopened: retry a few times.
 */
export async function runCommand(page: Page, title: string, attempts = 4): Promise<void> {
  for (let i = 1; ; i++) {
    await page.keyboard.press('Escape').catch(() => undefined);
    await page.keyboard.press('F1');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor({ timeout: 30_000 });
    await input.fill(`>${title}`);
    const row = page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first();
    try {
      await row.waitFor({ timeout: 10_000 });
      await input.press('Enter');
      return;
    } catch (e) {
      if (i >= attempts) throw e;
    }
  }
}

/** Quick Open (Ctrl+P) a workspace file by its relative path and wait for its text. */
export async function openFile(page: Page, rel: string, contains = 'version'): Promise<void> {
  await page.keyboard.press('Escape');
  await page.keyboard.press('Control+P');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor();
  await input.fill(rel);
  await page
    .locator('.quick-input-list .monaco-list-row', { hasText: rel.split('/').pop()! })
    .first()
    .waitFor();
  await input.press('Enter');
  await page.locator('.monaco-editor .view-lines', { hasText: contains }).first().waitFor();
}

/**
 * Runs a Start Training command on the open spec: answers "Start Anyway" to warnings and the GPU question
 * with `gpu` (the "…" command asks; 'spec' accepts the highlighted row, which must be the spec's GPU), picks
 * the target row, and confirms "Start".
 */
export async function startTrainingVia(page: Page, command: string, targetText: string | RegExp, failureShot: string, gpu = 'A100-40GB'): Promise<void> {
  await runCommand(page, command);
  const target = page.locator('.quick-input-list .monaco-list-row', { hasText: targetText }).first();
  for (let i = 0; i < 60; i++) {
    if (await target.isVisible()) break;
    const dialog = page.locator('.monaco-dialog-box .monaco-button', { hasText: /Start Anyway/ });
    if (await dialog.first().isVisible()) await dialog.first().click();
    const gpuPick = page.locator('.quick-input-widget', { hasText: 'Which GPU?' });
    if (await gpuPick.isVisible()) {
      if (gpu === 'spec') {
        // The spec's GPU must be the highlighted row, so Enter alone keeps it.
        const active = page.locator('.quick-input-list .monaco-list-row.focused');
        await active.waitFor({ timeout: 10_000 });
        if (!/in the spec/.test(await active.innerText())) throw new Error(`the GPU picker highlights ${await active.innerText()}, not the spec's GPU`);
        await page.locator('.quick-input-widget input').press('Enter');
      } else {
        await page.locator('.quick-input-widget input').fill(gpu);
        await page.locator('.quick-input-list .monaco-list-row', { hasText: gpu }).first().click();
      }
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  try {
    await target.click({ timeout: 30_000 });
  } catch (e) {
    await page.screenshot({ path: failureShot });
    throw e;
  }
  // The picked host is probed first: one without the asked GPU (the demo host has no NVIDIA GPU) is a
  // "start anyway?" question before the confirmation.
  const anyway = page.locator('.monaco-dialog-box .monaco-button', { hasText: /Start Anyway/ }).first();
  const start = page.locator('.monaco-dialog-box .dialog-buttons .monaco-button', { hasText: /^Start$/ }).first();
  await anyway.or(start).first().waitFor({ timeout: 60_000 });
  if (await anyway.isVisible()) await anyway.click();
  await clickDialogButton(page, /^Start$/);
}
