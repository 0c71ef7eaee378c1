import { describe, expect, it } from 'vitest';
import { SEARCH_RANK_WINDOW } from '../../src/services/search.js';
import { graphql } from '../generated/index.js';
import { API_KEYS, createTestApp, gqlError, gqlOk, type TestApp, TWO_WORKSPACES, useTestApp } from '../helpers/app.js';

const Search = graphql(`
  query Search($query: String!, $first: Int, $after: String) {
    searchMessages(query: $query, first: $first, after: $after) {
      edges {
        cursor
        highlight
        rank
        matchedRedaction
        message {
          id
          index
          text
          hidden
          redacted
        }
        session {
          id
          title
        }
      }
      pageInfo {
        hasNextPage
        endCursor
      }
    }
  }
`);

const Create = graphql(`
  mutation SearchCreate($input: CreateSessionInput!) {
    createSession(input: $input) {
      id
      messages(first: 50) {
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
  mutation SearchFork($input: ForkSessionInput!) {
    forkSession(input: $input) {
      session {
        id
      }
    }
  }
`);

const Redact = graphql(`
  mutation SearchRedact($input: RedactMessageInput!) {
    redactMessage(input: $input) {
      message {
        id
      }
    }
  }
`);

const Hide = graphql(`
  mutation SearchHide($input: HideMessagesInput!) {
    hideMessages(input: $input) {
      session {
        id
      }
    }
  }
`);

const Append = graphql(`
  mutation SearchAppend($input: AppendMessagesInput!) {
    appendMessages(input: $input) {
      messages {
        id
      }
    }
  }
`);

let app: TestApp;
useTestApp((built) => {
  app = built;
});

async function create(title: string, texts: string[], apiKey?: string) {
  const messages = texts.map((text, i) => ({ role: i % 2 === 0 ? ('USER' as const) : ('ASSISTANT' as const), text }));
  const data = await gqlOk(app, Create, { input: { title, messages } }, { apiKey });
  return { id: data.createSession.id, messageIds: data.createSession.messages.edges.map((e) => e.node.id) };
}

const search = async (query: string, first?: number, after?: string, target: TestApp = app, apiKey?: string) =>
  (await gqlOk(target, Search, { query, first, after }, { apiKey })).searchMessages;

describe('searchMessages', () => {
  it('finds "Make it cheaper." with its session and a highlight', async () => {
    const session = await create('Trip planning', ['Plan a trip to Lisbon.', 'Here is a plan: fly on Tuesday.', 'Make it cheaper.']);
    const { edges } = await search('cheaper');
    const hit = edges.find((e) => e.message.text === 'Make it cheaper.');
    expect(hit).toBeDefined();
    expect(hit!.session).toEqual({ id: session.id, title: 'Trip planning' });
    expect(hit!.message.index).toBe(2);
    expect(hit!.highlight).toBe('Make it <mark>cheaper</mark>.');
    expect(hit!.rank).toBeGreaterThan(0);
  });

  it("finds a fork's inherited message once, under the session that wrote it, and the fork's own under the fork", async () => {
    const root = await create('Quokka facts', ['Tell me about the quokka.', 'The quokka is a small marsupial.', 'More about quokkas?']);
    const fork = (await gqlOk(app, Fork, { input: { sessionId: root.id, messageIndex: 2 } })).forkSession.session;
    await gqlOk(app, Append, { input: { sessionId: fork.id, messages: [{ role: 'USER', text: 'Are quokkas friendly?' }] } });
    const { edges } = await search('quokka');
    expect(edges.map((e) => [e.message.text, e.session.id]).sort()).toEqual(
      [
        ['Are quokkas friendly?', fork.id],
        ['More about quokkas?', root.id],
        ['Tell me about the quokka.', root.id],
        ['The quokka is a small marsupial.', root.id],
      ].sort(),
    );
  });

  it('finds a redacted message by its replacement only, never by its original text; a hidden one is found and marked', async () => {
    const session = await create('Secrets', ['My passphrase is zanzibar-octopus.', 'Noted.', 'The wombat burrows deep.']);
    await gqlOk(app, Redact, { input: { messageId: session.messageIds[0], replacement: 'A credential was removed here.' } });
    await gqlOk(app, Hide, { input: { sessionId: session.id, messageIds: [session.messageIds[2]], reason: 'off topic' } });

    expect((await search('zanzibar')).edges).toEqual([]);
    expect((await search('octopus')).edges).toEqual([]);
    const [redacted] = (await search('credential removed')).edges;
    expect(redacted.message.id).toBe(session.messageIds[0]);
    expect(redacted.message.redacted).toBe(true);
    expect(redacted.matchedRedaction).toBe(true);
    expect(redacted.highlight).toBe('A <mark>credential</mark> was <mark>removed</mark> here.');
    expect(redacted.highlight).not.toContain('zanzibar');

    const [hidden] = (await search('wombat')).edges;
    expect(hidden.message).toMatchObject({ id: session.messageIds[2], hidden: true });
    expect(hidden.matchedRedaction).toBe(false);
  });

  it('ranks by relevance, then newest first, and pages with stable cursors', async () => {
    await create('Pangolins', [
      'pangolin',
      'a pangolin eats ants',
      'pangolin pangolin pangolin scales',
      'pangolin again',
      'one more pangolin',
    ]);
    const all = (await search('pangolin', 50)).edges;
    expect(all.length).toBe(5);
    for (let i = 1; i < all.length; i++) expect(all[i - 1].rank).toBeGreaterThanOrEqual(all[i].rank);
    expect(all[0].message.text).toBe('pangolin pangolin pangolin scales');

    const seen: string[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await search('pangolin', 2, after);
      seen.push(...page.edges.map((e) => e.message.id));
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor!;
    }
    expect(seen).toEqual(all.map((e) => e.message.id));
  });

  it(`ranks only the newest ${SEARCH_RANK_WINDOW} matches, and pages through exactly those`, async () => {
    // The five oldest matches would rank first (the word four times): outside the window, never returned.
    const session = await create(
      'Okapis',
      Array.from({ length: 5 }, () => 'okapi okapi okapi okapi'),
    );
    for (let made = 0; made < SEARCH_RANK_WINDOW; made += 1000) {
      const count = Math.min(1000, SEARCH_RANK_WINDOW - made);
      const messages = Array.from({ length: count }, (_, i) => ({ role: 'USER' as const, text: `an okapi, number ${made + i}` }));
      await gqlOk(app, Append, { input: { sessionId: session.id, messages } });
    }
    const seen = new Set<string>();
    let previousRank = Number.POSITIVE_INFINITY;
    let after: string | undefined;
    for (;;) {
      const page = await search('okapi', 50, after);
      for (const edge of page.edges) {
        expect(edge.rank).toBeLessThanOrEqual(previousRank);
        previousRank = edge.rank;
        seen.add(edge.message.id);
      }
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor!;
    }
    expect(seen.size).toBe(SEARCH_RANK_WINDOW);
    for (const oldest of session.messageIds) expect(seen.has(oldest)).toBe(false);
  });

  it('highlights a match deep inside a long message, from a bounded window of it', async () => {
    const filler = 'lorem ipsum dolor sit amet '.repeat(300);
    await create('Long read', [`${filler}the axolotl regrows its limbs ${filler}`]);
    const [hit] = (await search('axolotl')).edges;
    expect(hit.highlight).toContain('<mark>axolotl</mark> regrows its limbs');
    expect(hit.highlight.length).toBeLessThan(1_000);
  });

  it('escapes HTML in highlights', async () => {
    await create('Markup', ['<script>alert("ibex")</script> & ibex']);
    const [hit] = (await search('ibex')).edges;
    expect(hit.highlight).not.toContain('<script>');
    expect(hit.highlight).toBe('&lt;script&gt;alert(&quot;<mark>ibex</mark>&quot;)&lt;/script&gt; &amp; <mark>ibex</mark>');
    expect(hit.highlight).toContain('<mark>ibex</mark>');
  });

  it('refuses unbounded or malformed input with BAD_USER_INPUT; stop words alone match nothing', async () => {
    for (const variables of [
      { query: '   ' },
      { query: 'x'.repeat(257) },
      { query: Array.from({ length: 17 }, (_, i) => `w${i}`).join(' ') },
      { query: 'cheaper', first: 51 },
      { query: 'cheaper', first: -1 },
      { query: 'cheaper', after: 'not-a-cursor' },
      { query: 'cheaper', after: Buffer.from('search:[1,"x",2]').toString('base64url') },
    ]) {
      expect((await gqlError(app, Search, variables)).code, JSON.stringify(variables)).toBe('BAD_USER_INPUT');
    }
    expect((await search('the and of')).edges).toEqual([]);
    expect((await search('"unclosed -- or or or')).edges).toBeDefined();
  });
});

describe('searchMessages across workspaces', () => {
  it("finds only the asking workspace's messages", async () => {
    const keyed = await createTestApp({ apiKeys: TWO_WORKSPACES });
    try {
      await gqlOk(
        keyed,
        Create,
        { input: { title: 'A', messages: [{ role: 'USER', text: 'The narwhal tusk.' }] } },
        { apiKey: API_KEYS.alpha },
      );
      expect((await search('narwhal', 10, undefined, keyed, API_KEYS.alpha)).edges).toHaveLength(1);
      expect((await search('narwhal', 10, undefined, keyed, API_KEYS.beta)).edges).toEqual([]);
    } finally {
      await keyed.close();
    }
  });
});

const SessionsByTitle = graphql(`
  query SessionsByTitle($titleContains: String) {
    sessions(first: 50, titleContains: $titleContains) {
      edges {
        node {
          title
        }
      }
    }
  }
`);

describe('sessions(titleContains:)', () => {
  it('filters by title, ignoring case, with % and _ taken literally', async () => {
    await create('Budget 100% done', ['x']);
    await create('Budget 1000 done', ['x']);
    await create('snake_case title', ['x']);
    const titles = async (titleContains: string) =>
      (await gqlOk(app, SessionsByTitle, { titleContains })).sessions.edges.map((e) => e.node.title);
    expect(await titles('budget')).toEqual(['Budget 1000 done', 'Budget 100% done']);
    expect(await titles('0% d')).toEqual(['Budget 100% done']);
    expect(await titles('e_c')).toEqual(['snake_case title']);
    expect((await gqlError(app, SessionsByTitle, { titleContains: 'x'.repeat(201) })).code).toBe('BAD_USER_INPUT');
  });
});
