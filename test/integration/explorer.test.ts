// The explorer page in a real browser (Debian's Chromium through playwright-core), against a
// listening server: find a session by title, open it, see its messages, its fork and its active
// turn; then another client reports usage and completes the agents, and the page shows it live.
// Screenshots of each state go to test/output/explorer/ (ignored by git) for review.
//
// Tagged `program` (it drives a whole browser): it runs on CI and in `npm run test:all`, not in a
// plain `npm test`. Chromium is required then: `.ci/run` installs it (apt-get install chromium).
// Without it this test fails, unless EXPLORER_BROWSER=skip is set (for a machine that cannot have
// it; never in CI).
import { existsSync, mkdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makePng } from '../helpers/images.js';
import { type Browser, chromium, type Page, type WebSocketRoute } from 'playwright-core';
import { graphql } from '../generated/index.js';
import { API_KEYS, createTestApp, dropTestDatabases, gqlOk, type TestApp, TWO_WORKSPACES } from '../helpers/app.js';
import { CompleteAgent, ReportUsage, StartTurn } from '../helpers/turn-documents.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const OUTPUT = new URL('../output/explorer/', import.meta.url);
const skip = process.env.EXPLORER_BROWSER === 'skip' && !process.env.CI;

const Seed = graphql(`
  mutation ExplorerSeed($input: CreateSessionInput!) {
    createSession(input: $input) {
      id
      messages(first: 10) {
        edges {
          node {
            id
          }
        }
      }
    }
  }
`);

const Fork = graphql(`
  mutation ExplorerSeedFork($input: ForkSessionInput!) {
    forkSession(input: $input) {
      session {
        id
        title
      }
    }
  }
`);

const Hide = graphql(`
  mutation ExplorerSeedHide($input: HideMessagesInput!) {
    hideMessages(input: $input) {
      session {
        id
      }
    }
  }
`);

/** Fails the test when a state does not show in time; 2 s is the bound for live updates. */
const LIVE_MS = 2_000;

describe.skipIf(skip).each([
  { keys: false, label: 'keys-off' },
  { keys: true, label: 'keys-on' },
])('the explorer ($label)', { tags: ['program'] }, ({ keys, label }) => {
  let app: TestApp;
  let browser: Browser;
  let page: Page;
  const offOrigin: string[] = [];
  const consoleErrors: string[] = [];
  let shot = 0;
  const screenshot = (name: string) =>
    page.screenshot({ path: new URL(`${label}-${++shot}-${name}.png`, OUTPUT).pathname, fullPage: true });
  const apiKey = keys ? API_KEYS.alpha : undefined;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(`Chromium is not installed at ${CHROMIUM}: apt-get install -y chromium (or EXPLORER_BROWSER=skip outside CI).`);
    }
    mkdirSync(OUTPUT, { recursive: true });
    app = await createTestApp(keys ? { apiKeys: TWO_WORKSPACES } : {});
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-dev-shm-usage'],
    });
    page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    page.setDefaultTimeout(8_000);
    const origin = new URL(app.url);
    const sameOrigin = (url: string) => {
      const u = new URL(url);
      return u.host === origin.host && ['http:', 'ws:'].includes(u.protocol);
    };
    page.on('request', (request) => {
      // data: and blob: URLs are the page's own bytes (a thumbnail read with the key), never the network.
      if (!/^(data|blob):/.test(request.url()) && !sameOrigin(request.url())) offOrigin.push(request.url());
    });
    page.on('websocket', (socket) => {
      if (!sameOrigin(socket.url())) offOrigin.push(socket.url());
    });
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    page.on('pageerror', (error) => consoleErrors.push(error.message));
  });

  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await dropTestDatabases();
  });

  it('finds a session by title, shows its messages, fork and active turn, follows the turn live and resumes after a reconnect', async () => {
    const title = `Voyage ${label}`;
    const { createSession } = await gqlOk(
      app,
      Seed,
      {
        input: {
          title,
          messages: [
            { role: 'USER', text: 'Plan a trip to Porto.' },
            {
              role: 'ASSISTANT',
              parts: [
                {
                  reasoning: {
                    text: 'The user wants Porto: search flights first.',
                    providerMetadata: { anthropic: { signature: 'c2lnbmF0dXJl' } },
                  },
                },
                { reasoning: { redacted: true, providerMetadata: { anthropic: { redactedData: 'ZW5jcnlwdGVk' } } } },
                { text: { text: 'Checking flights.' } },
                { toolCall: { callId: 'call-1', name: 'search_flights', arguments: { to: 'OPO' } } },
              ],
            },
            { role: 'TOOL', parts: [{ toolResult: { callId: 'call-1', content: 'upstream timeout', isError: true } }] },
            {
              role: 'USER',
              parts: [
                { text: { text: 'Make it cheaper.' } },
                { attachment: { name: 'budget.md', mimeType: 'text/markdown', content: '# 300 EUR' } },
                { attachment: { name: 'map.png', mimeType: 'image/png', data: makePng(64, 48).toString('base64') } },
              ],
            },
            { role: 'ASSISTANT', text: 'A night train, then.' },
          ],
        },
      },
      { apiKey },
    );
    const sessionId = createSession.id;
    const messageIds = createSession.messages.edges.map((e) => e.node.id);
    const { forkSession } = await gqlOk(app, Fork, { input: { sessionId, messageIndex: 3 } }, { apiKey });
    expect(forkSession.session.title).toBe(`${title} (fork 1)`);
    await gqlOk(app, Hide, { input: { sessionId, messageIds: [messageIds[4]], reason: 'superseded' } }, { apiKey });
    const { startTurn } = await gqlOk(app, StartTurn, { input: { sessionId, agentIds: ['planner', 'critic'] } }, { apiKey });
    const turnId = startTurn.id;
    await gqlOk(app, ReportUsage, { input: { turnId, agentId: 'planner', inputTokens: 1200, outputTokens: 80, callId: 'a' } }, { apiKey });

    // Every graphql-ws socket of the page goes through here, so the test can cut it and read what the page sends.
    const sockets: WebSocketRoute[] = [];
    const subscribes: { afterSequence?: number | null }[] = [];
    await page.routeWebSocket(/\/graphql$/, (socket) => {
      const server = socket.connectToServer();
      sockets.push(socket);
      socket.onMessage((message) => {
        const parsed = JSON.parse(String(message)) as { type: string; payload?: { variables?: { afterSequence?: number | null } } };
        if (parsed.type === 'subscribe') subscribes.push(parsed.payload?.variables ?? {});
        server.send(message);
      });
    });
    await page.goto(new URL('/explorer', app.url).href);
    if (keys) {
      await page.getByRole('alert').waitFor();
      expect(await page.getByRole('alert').textContent()).toContain('API key');
      await page.getByLabel('API key').fill(API_KEYS.alpha);
      await page.getByRole('button', { name: 'Use key' }).click();
      expect(await page.evaluate(() => [sessionStorage.length, localStorage.length])).toEqual([1, 0]);
    }
    await page.getByRole('heading', { name: 'Sessions' }).waitFor();
    await page.getByLabel('Search titles').fill(label);
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByText('2 sessions').waitFor();
    await screenshot('sessions');

    await page.getByRole('link', { name: title, exact: true }).click();
    await page.locator('li.message').nth(4).waitFor();
    const messages = page.locator('li.message');
    expect(await messages.count()).toBe(5);
    expect(await messages.nth(3).textContent()).toContain('Make it cheaper.');
    // A file is a chip that opens its bytes; an image a thumbnail of its bytes, read with the page's key.
    expect(await messages.nth(3).locator('a.file-chip').textContent()).toContain('budget.md (text/markdown, 9 bytes)');
    const thumbnail = messages.nth(3).locator('figure.attachment img.thumbnail');
    await thumbnail.waitFor();
    await expect.poll(() => thumbnail.evaluate((img) => (img as HTMLImageElement).naturalWidth)).toBe(64);
    expect(await thumbnail.getAttribute('src')).toMatch(/^blob:/);
    expect(await messages.nth(3).locator('figcaption').textContent()).toContain('map.png (image/png');
    expect(await messages.nth(2).locator('details.tool-result.failed summary').textContent()).toContain('failed');
    expect(await messages.nth(1).locator('details.tool-call summary').textContent()).toContain('search_flights');
    // Reasoning is folded before the text it led to; redacted reasoning says so and shows nothing.
    const reasoning = messages.nth(1).locator('details.reasoning');
    expect(await reasoning.locator('summary').textContent()).toBe('reasoning');
    expect(await reasoning.evaluate((el) => (el as HTMLDetailsElement).open)).toBe(false);
    expect(await reasoning.locator('pre').textContent()).toBe('The user wants Porto: search flights first.');
    expect(await messages.nth(1).locator('.reasoning.redacted').textContent()).toBe('reasoning (redacted by the provider)');
    expect(await messages.nth(1).textContent()).not.toContain('ZW5jcnlwdGVk');
    const order = await messages.nth(1).evaluate((el) => [...el.children].map((c) => c.className));
    expect(order.indexOf('reasoning')).toBeLessThan(order.indexOf('text'));
    expect(await messages.nth(4).locator('.badge.hidden').textContent()).toBe('hidden: superseded');
    await page.locator('.fork-tree text', { hasText: '(fork 1)' }).waitFor();
    const planner = page.locator(`article.turn[data-id="${turnId}"] tr[data-agent="planner"]`);
    expect(await planner.locator('[data-field="status"]').textContent()).toBe('active');
    expect(await planner.locator('[data-field="input"]').textContent()).toBe('1,200');
    await page
      .locator('#live', { hasText: 'live' })
      .or(page.locator('#live', { hasText: 'connecting' }))
      .waitFor();
    await screenshot('session');

    // Another client reports usage and completes both agents; the page follows without a reload.
    await gqlOk(
      app,
      ReportUsage,
      {
        input: {
          turnId,
          agentId: 'planner',
          inputTokens: 12_345,
          outputTokens: 678,
          cacheReadTokens: 4_096,
          cacheWriteTokens: 1_024,
          cost: 0.0123,
          callId: 'b',
        },
      },
      { apiKey },
    );
    await planner.locator('[data-field="input"]', { hasText: '13,545' }).waitFor({ timeout: LIVE_MS });
    expect(await planner.locator('[data-field="cache-read"]').textContent()).toBe('4,096');
    await screenshot('usage');
    await gqlOk(app, CompleteAgent, { input: { turnId, agentId: 'planner', success: true } }, { apiKey });
    await gqlOk(app, CompleteAgent, { input: { turnId, agentId: 'critic', success: true } }, { apiKey });
    // The turn's cost says where it comes from: one call reported its cost, one had neither a cost
    // nor a model (unknown); the header's session and tree costs follow without a reload.
    const turnCost = page.locator(`article.turn[data-id="${turnId}"] tfoot [data-field="cost"] .cost`);
    expect(await turnCost.getAttribute('data-source')).toBe('UNKNOWN');
    expect(await turnCost.textContent()).toBe('$0.0123 + ?');
    await page.locator('[data-field="session-cost"]', { hasText: '$0.0123 + ?' }).waitFor({ timeout: LIVE_MS + 1_000 });
    expect(await page.locator('[data-field="tree-cost"]').textContent()).toBe('$0.0123 + ?');
    await page.locator(`article.turn[data-id="${turnId}"][data-status="COMPLETED"]`).waitFor({ timeout: LIVE_MS });
    expect(await planner.locator('[data-field="status"]').textContent()).toBe('completed');
    expect(await page.locator(`article.turn[data-id="${turnId}"] tfoot [data-field="output"]`).textContent()).toBe('758');
    await screenshot('completed');

    // The connection drops; what happens meanwhile arrives after the reconnect, once, because the
    // page subscribes again after the last sequence it saw.
    const { startTurn: second } = await gqlOk(app, StartTurn, { input: { sessionId, agentIds: ['planner'] } }, { apiKey });
    await page.locator(`article.turn[data-id="${second.id}"]`).waitFor({ timeout: LIVE_MS });
    for (const socket of sockets.splice(0)) await socket.close({ code: 1012, reason: 'restarting' });
    await gqlOk(app, ReportUsage, { input: { turnId: second.id, agentId: 'planner', inputTokens: 777, callId: 'c' } }, { apiKey });
    const secondPlanner = page.locator(`article.turn[data-id="${second.id}"] tr[data-agent="planner"]`);
    // The page reconnects after 0.5 to 1 s.
    await secondPlanner.locator('[data-field="input"]', { hasText: '777' }).waitFor({ timeout: 5_000 });
    expect(subscribes.length).toBe(2);
    expect(subscribes[0].afterSequence).toBeNull();
    expect(subscribes[1].afterSequence).toBeGreaterThan(0);
    expect(await page.locator('article.turn').count()).toBe(2);

    // The next context, message by message.
    await page.getByRole('button', { name: 'Assemble' }).click();
    await page.locator('table.decisions tbody tr').nth(4).waitFor();
    expect(await page.locator('table.decisions tbody tr').nth(4).textContent()).toContain('HIDDEN');

    // The gauge: how full the next context is from stored counts, against a budget as it is typed;
    // then an assembly with a model says what the provider's cache reuses of it and what it costs.
    const gauge = page.locator('.gauge');
    expect(Number(await gauge.getAttribute('data-used'))).toBeGreaterThan(0);
    expect(await page.locator('.gauge-figures').textContent()).toContain('no budget');
    await page.getByLabel('Token budget').fill('20');
    await page.getByLabel('Token budget').dispatchEvent('change');
    await page.locator('.gauge-figures', { hasText: 'of 20' }).waitFor();
    expect(await page.locator('.gauge-figures').textContent()).toContain('the oldest messages are dropped now');
    expect(await page.locator('.gauge-bar .segment').count()).toBeGreaterThan(1);
    await page.getByLabel('Token budget').fill('');
    await page.getByLabel('Format').selectOption('ANTHROPIC_MESSAGES');
    await page.getByLabel('Model').fill('claude-sonnet-4-5');
    await page.getByLabel('Model').dispatchEvent('change');
    await page.locator('.gauge-figures', { hasText: /of [\d,]+ \(\d+%\)/ }).waitFor();
    for (const round of [1, 2]) {
      await page.getByRole('button', { name: 'Assemble' }).click();
      const reused = page.locator('[data-field="reused"]');
      if (round === 1) {
        await page.locator('p.reuse', { hasText: '(0%) reused' }).waitFor();
      } else {
        // Nothing changed since: all of the payload but the reply's priming is the prefix the
        // provider cached a moment ago.
        await expect.poll(async () => Number((await reused.textContent())?.replace(/\D/g, ''))).toBeGreaterThan(0);
        const share = Number((await page.locator('p.reuse').textContent())?.match(/\((\d+)%\)/)?.[1]);
        expect(share).toBeGreaterThanOrEqual(90);
      }
    }
    expect(await page.locator('[data-field="estimated-cost"]').textContent()).toMatch(/estimated input cost \$0\.\d+ USD/);
    await screenshot('gauge-and-reuse');

    // The fork tree navigates; a message search opens the session at the hit.
    await page.locator('.fork-tree text', { hasText: '(fork 1)' }).click();
    await page.getByRole('heading', { name: `${title} (fork 1)` }).waitFor();
    expect(await page.locator('li.message').count()).toBe(3);
    await page.goto(new URL('/explorer#/', app.url).href);
    await page.getByLabel('Search messages').fill('cheaper');
    await page.getByRole('button', { name: 'Search' }).click();
    const hit = page.locator('ul.hits li', { hasText: title });
    expect(await hit.locator('mark').first().textContent()).toBe('cheaper');
    await hit.getByRole('link').click();
    await page.locator(`li.message.target[data-id="${messageIds[3]}"]`).waitFor();
    await screenshot('search-hit');

    // "fork here" opens the new fork with the message it left out in an editor.
    await page.locator(`li.message[data-id="${messageIds[3]}"]`).getByRole('button', { name: 'fork here' }).click();
    await page.getByRole('heading', { name: `${title} (fork 2)` }).waitFor();
    expect(await page.getByLabel('Message to send in this fork').inputValue()).toBe('Make it cheaper.');
    await screenshot('fork-here');

    expect(offOrigin).toEqual([]);
    expect(consoleErrors).toEqual([]);
  });

  it("a share link's url opens its session read-only: messages (inherited ones too) and live updates, no fork, send or context", async () => {
    const key = { apiKey };
    const { createSession } = await gqlOk(
      app,
      Seed,
      {
        input: {
          title: `Shared ${label}`,
          messages: [
            { role: 'USER', text: 'Shared question' },
            { role: 'ASSISTANT', text: 'Shared answer' },
            { role: 'USER', text: 'Later' },
          ],
        },
      },
      key,
    );
    const { forkSession } = await gqlOk(
      app,
      Fork,
      { input: { sessionId: createSession.id, messageIndex: 2, title: `Shared fork ${label}` } },
      key,
    );
    const link = (await gqlOk(
      app,
      `mutation($id: ID!) { createShareLink(input: { sessionId: $id }) { url token } }`,
      { id: forkSession.session.id },
      key,
    )) as {
      createShareLink: { url: string; token: string };
    };
    const viewer = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    viewer.setDefaultTimeout(8_000);
    const errors: string[] = [];
    viewer.on('pageerror', (error) => errors.push(error.message));
    try {
      await viewer.goto(new URL(link.createShareLink.url, app.url).href);
      await viewer.getByRole('heading', { name: `Shared fork ${label}` }).waitFor();
      await viewer.locator('li.message', { hasText: 'Shared answer' }).waitFor();
      expect(await viewer.locator('li.message').count()).toBe(2);
      // The token left the address bar; nothing that writes or leaves the session is offered.
      expect(viewer.url()).not.toContain(link.createShareLink.token);
      expect(await viewer.getByRole('button', { name: 'fork here' }).count()).toBe(0);
      expect(await viewer.getByRole('heading', { name: 'Fork tree' }).count()).toBe(0);
      expect(await viewer.getByRole('button', { name: 'Assemble' }).count()).toBe(0);
      await viewer.locator('#live', { hasText: 'live' }).waitFor();
      await gqlOk(
        app,
        `mutation($input: AppendMessagesInput!) { appendMessages(input: $input) { session { id } } }`,
        { input: { sessionId: forkSession.session.id, messages: [{ role: 'USER', text: 'Appended while shared' }] } },
        key,
      );
      await viewer.locator('li.message', { hasText: 'Appended while shared' }).waitFor({ timeout: LIVE_MS });
      await viewer.screenshot({ path: new URL(`${label}-shared-view.png`, OUTPUT).pathname, fullPage: true });
      expect(errors).toEqual([]);
    } finally {
      await viewer.close();
    }
  });
});
