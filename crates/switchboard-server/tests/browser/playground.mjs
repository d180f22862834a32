// The playground in a real browser (Debian's Chromium, headless, driven by playwright-core)
// against a gateway in front of a scripted backend; tests/it/browser.rs starts both and runs
// this script. Each step names what it checks; the first failure stops the run with a
// screenshot of the page as it was. Screenshots of every view are left for a person to look at.
//
// Environment: BASE_URL, CHARACTERS_DIR (a copy this script may edit), SCREENSHOTS (a
// directory), CHROMIUM (the browser), PLAYWRIGHT_DIR (where playwright-core is installed).
// Line protocol on stdout: `partial-text-seen` asks the Rust side to let the backend
// finish its streamed reply.

import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const { BASE_URL, CHARACTERS_DIR, SCREENSHOTS, CHROMIUM, PLAYWRIGHT_DIR } = process.env;
const require = createRequire(join(PLAYWRIGHT_DIR, 'package.json'));
const { chromium } = require('playwright-core');

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-quic',
    '--disable-component-update',
    '--disable-sync',
  ],
});

const problems = [];
let page;

async function open(width, height, hash = '') {
  const context = await browser.newContext({ viewport: { width, height }, deviceScaleFactor: 1 });
  const opened = await context.newPage();
  opened.setDefaultTimeout(15000);
  opened.on('pageerror', (error) => problems.push(`uncaught: ${error.message}`));
  opened.on('console', (message) => {
    const text = message.text();
    // Failed fetches are logged by the browser itself; the page shows them, which is checked.
    if (message.type() === 'error' && !text.startsWith('Failed to load resource')) problems.push(`console: ${text}`);
  });
  await opened.goto(`${BASE_URL}/${hash}`);
  return opened;
}

async function step(name, work) {
  process.stderr.write(`step: ${name}\n`);
  try {
    await work();
  } catch (error) {
    await page?.screenshot({ path: join(SCREENSHOTS, 'failure.png'), fullPage: true }).catch(() => {});
    process.stderr.write(`FAILED at step "${name}":\n${error.stack ?? error}\n`);
    await browser.close();
    process.exit(1);
  }
}

const shot = (name) => page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
const narratorFile = join(CHARACTERS_DIR, 'narrator.js');
const original = readFileSync(narratorFile, 'utf8');
const tools = () => page.locator('.tools-column');
const transcript = () => page.locator('.chat-column .transcript');

await step('the page lists the narrator and the route', async () => {
  page = await open(1280, 800);
  await page.getByRole('button', { name: /Narrator/ }).waitFor();
  await page.getByRole('button', { name: 'qwen' }).waitFor();
  assert.equal(await page.title(), 'Switchboard playground');
});

await step('picking the narrator shows its panel', async () => {
  await page.getByRole('button', { name: /Narrator/ }).click();
  await page.locator('.panel-head h2', { hasText: 'Narrator' }).waitFor();
  await tools().locator('h4', { hasText: 'log_story_event' }).waitFor();
  assert.match(await page.locator('.panel-head .meta').innerText(), /Voice: A calm, warm narrator voice/);
});

await step('a message streams in: a tool card with arguments and result, then the words', async () => {
  await page.getByLabel('Message', { exact: true }).fill('I search the old desk.');
  await page.getByLabel('Message', { exact: true }).press('Enter');
  const card = transcript().locator('.tool-card');
  await card.locator('.tool-name', { hasText: 'log_story_event' }).waitFor();
  await card.locator('.tool-result', { hasText: 'Logged story event: The hero found the brass key' }).waitFor();
  const args = JSON.parse(await card.locator('.tool-args').innerText());
  assert.deepEqual(args, { event: 'The hero found the brass key', importance: 'high' });
  assert.match(await card.locator('.tool-status').innerText(), /^done · [\d.]+ (ms|s)$/);
  // The backend holds the rest of its reply until the page has shown the first part.
  const words = transcript().locator('.turn.assistant .text').last();
  await words.filter({ hasText: 'The door creaks open.' }).waitFor();
  assert.doesNotMatch(await words.innerText(), /What do you do\?/);
  console.log('partial-text-seen');
  await words.filter({ hasText: 'The door creaks open. What do you do?' }).waitFor();
  // The card comes before the words that followed the call.
  const order = await card.evaluate((cardElement, text) => {
    const paragraph = [...document.querySelectorAll('.turn.assistant .text')].find((p) => p.textContent.includes(text));
    return Boolean(cardElement.compareDocumentPosition(paragraph) & Node.DOCUMENT_POSITION_FOLLOWING);
  }, 'What do you do?');
  assert.ok(order, 'the follow-up text is below the card');
  await transcript().locator('.turn-foot', { hasText: 'tokens: 250 in · 32 out · 282 total' }).waitFor();
});

await step('the system prompt the character built is one click away', async () => {
  await page.locator('summary', { hasText: 'System prompt' }).click();
  const prompt = page.locator('.prompt .prompt-text').first();
  await prompt.filter({ hasText: 'narrator of an interactive adventure' }).waitFor();
  assert.match(await prompt.innerText(), /call log_story_event with a one-line summary/);
});

await step('the tool form refuses a value outside the enum with the exact error', async () => {
  const form = tools().locator('form.tool-form').first();
  await form.getByRole('textbox', { name: 'event', exact: true }).fill('The hero fell');
  await form.getByRole('combobox', { name: 'importance', exact: true }).selectOption({ label: 'Other value…' });
  await form.getByLabel('Other value').fill('loud');
  await form.getByRole('button', { name: 'Call' }).click();
  await form
    .locator('.tool-result.failed', {
      hasText: 'Error: Invalid parameters - /importance: "loud" is not one of the allowed values: "low", "medium", "high"',
    })
    .waitFor();
});

await step('the tool form calls the tool with defaults and enum choices', async () => {
  const form = tools().locator('form.tool-form').first();
  await form.getByRole('combobox', { name: 'importance', exact: true }).selectOption({ label: '"high"' });
  await form.getByRole('button', { name: 'Call' }).click();
  await form.locator('.tool-result.ok', { hasText: 'Logged story event: The hero fell' }).waitFor();
  await shot('desktop-character');
});

await step('a form is made from every kind of schema field, defaults filled in', async () => {
  await page.getByRole('button', { name: /Forms/ }).click();
  const form = tools().locator('form.tool-form').first();
  await form.locator('h4', { hasText: 'configure' }).waitFor();
  const sent = async () => JSON.parse(await form.getByLabel('Arguments sent to configure').inputValue());
  assert.deepEqual(await sent(), { count: 3, loud: false, mode: 'slow', tags: ['a'], place: {} });
  assert.equal(await form.locator('abbr.required').count(), 3, 'title, place and place.city are marked');
  await form.getByRole('textbox', { name: 'title', exact: true }).fill('Hi');
  await form.getByRole('spinbutton', { name: 'ratio', exact: true }).fill('0.5');
  await form.getByRole('combobox', { name: 'loud', exact: true }).selectOption('true');
  await form.getByRole('textbox', { name: 'city', exact: true }).fill('Paris');
  await form.getByRole('button', { name: 'Add item' }).click();
  await form.getByRole('textbox', { name: 'item 2', exact: true }).fill('b');
  const expected = { title: 'Hi', count: 3, ratio: 0.5, loud: true, mode: 'slow', tags: ['a', 'b'], place: { city: 'Paris' } };
  assert.deepEqual(await sent(), expected);
  await form.getByRole('button', { name: 'Call' }).click();
  const result = form.locator('.tool-result.ok');
  await result.waitFor();
  assert.deepEqual(JSON.parse(await result.innerText()), expected);
  await shot('desktop-forms');
  await page.getByRole('button', { name: /Narrator/ }).click();
  await page.locator('.panel-head h2', { hasText: 'Narrator' }).waitFor();
});

await step('a saved edit to the file shows without restarting the server', async () => {
  writeFileSync(
    narratorFile,
    original.replace(
      'Log an important narrative event to the terminal for the developer to see',
      'Log a story event (edited while the server runs)',
    ),
  );
  await tools().locator('.hint', { hasText: 'Log a story event (edited while the server runs)' }).waitFor();
  // The conversation on the page goes on.
  await transcript().locator('.tool-card').first().waitFor();
});

await step('a save that breaks the file shows its problems with a line number', async () => {
  const lines = original.split('\n');
  const broken = lines.findIndex((line) => line.startsWith('export const METADATA'));
  lines[broken] = 'export const METADATA = { good: true, comment: ;';
  writeFileSync(narratorFile, lines.join('\n'));
  const notice = page.locator('.notice.warn');
  await notice.waitFor();
  assert.match(await notice.innerText(), /last good version keeps running/);
  const where = await notice.locator('code.where').first().innerText();
  assert.match(where, new RegExp(`^narrator\\.js:${broken + 1}:\\d+$`));
  assert.match(await notice.innerText(), new RegExp(`syntax error at line ${broken + 1}`));
  await page.locator('#character-list .badge.warn', { hasText: 'problems' }).waitFor();
  await shot('desktop-problems');
});

await step('a route chat shows the tool_call_errors entry on its call', async () => {
  await page.getByRole('button', { name: 'qwen' }).click();
  await page.locator('.panel-head h2', { hasText: 'qwen' }).waitFor();
  assert.match(await page.getByLabel('Tools').inputValue(), /get_weather/);
  await page.getByLabel('tool_choice').selectOption('required');
  await page.getByLabel('Message', { exact: true }).fill('What is the weather in Paris?');
  await page.getByLabel('Message', { exact: true }).press('Enter');
  const card = transcript().locator('.tool-card');
  await card.locator('.tool-name', { hasText: 'get_weather' }).waitFor();
  const error = card.locator('.call-error');
  await error.waitFor();
  assert.match(await error.innerText(), /^invalid_tool_arguments tool call 0 \(get_weather\): Invalid parameters - \/city: expected string, got number 7/);
  assert.deepEqual(JSON.parse(await card.locator('.tool-args').innerText()), { city: 7 });
  await transcript().locator('.turn-foot', { hasText: 'finish: tool_calls' }).waitFor();
  await shot('desktop-route');
});

await step('a phone-sized page is usable, and a backend failure shows in the conversation', async () => {
  page = await open(390, 844, '#character/narrator');
  await page.locator('.panel-head h2', { hasText: 'Narrator' }).waitFor();
  await page.locator('.notice.warn').waitFor();
  await shot('phone-character');
  await page.getByRole('button', { name: 'qwen' }).click();
  await page.getByLabel('Message', { exact: true }).fill('Hello?');
  await page.getByLabel('Message', { exact: true }).press('Enter');
  // The scripted backend has no replies left and has stopped listening.
  const error = transcript().locator('.error-box');
  await error.waitFor();
  assert.match(await error.innerText(), /^HTTP 502 · backend_unreachable: /);
  await shot('phone-route-error');
});

await step('nothing went wrong inside the page', async () => {
  assert.deepEqual(problems, []);
});

await browser.close();
console.log('all-steps-passed');
