// Steps the web client's browser tests share: open a new chat, pick a model, send; wait for the run
// to end; read the open chat's id from the page's address.
import type { Page } from 'playwright-core';

/** provider_b: no service tools, so its text is never held back while a round could turn into tool calls. */
export const MODEL = 'provider_b:sim-b-large';

export async function sendInNewChat(page: Page, baseUrl: string, text: string, model = MODEL): Promise<void> {
  await page.goto(`${baseUrl}/#new-chat`);
  await page.locator(`#model option[value="${model}"]`).waitFor({ state: 'attached' });
  await page.selectOption('#model', model);
  await page.fill('textarea[name=text]', text);
  await page.keyboard.press('Enter');
}

/** The answer is there and nothing streams any more (the stored chat has been reloaded). */
export const idle = (page: Page) =>
  page.waitForFunction(() => document.querySelector('.msg.assistant') && !document.querySelector('[aria-busy]') && /#chat\//.test(location.hash));

export const chatIdOf = (page: Page): string => decodeURIComponent(new URL(page.url()).hash.replace(/^#chat\//, ''));
