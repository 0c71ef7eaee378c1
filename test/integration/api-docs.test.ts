import { readFileSync } from 'node:fs';
import { parse, validate } from 'graphql';
import { describe, expect, it } from 'vitest';
import {
  ANSWER_MESSAGE_ID,
  ATTACHMENT_ID,
  EXAMPLES,
  GENERATING_MESSAGE_ID,
  RETURNED_IDS,
  SEEDED_ATTACHMENT,
  SEEDED_MESSAGES,
  SESSION_ID,
} from '../../docs/examples.js';
import { DOCS_FILE, printDocs } from '../../scripts/print-docs.js';
import { schema } from '../../src/schema/index.js';
import { backend, gqlOk, type TestApp, useTestApp } from '../helpers/app.js';
import { subscribeSse } from '../helpers/subscriptions.js';

/** A response with what differs from run to run (global IDs, times, hashes) replaced by a stand-in. */
function normalized(value: unknown): unknown {
  if (typeof value === 'string') {
    if (/^(Session|Message|Turn|Attachment|ShareLink):/.test(Buffer.from(value, 'base64').toString('utf8'))) return '<id>';
    // A share token, alone or in its url: each run makes its own.
    if (/sgs_/.test(value)) return value.replace(/sgs_[^&\s]+/, '<token>').replace(/session=[^&]+/, 'session=<id>');
    if (/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/.test(value)) return '<time>';
    if (/^[0-9a-f]{64}$/.test(value)) return '<hash>';
    return value;
  }
  if (Array.isArray(value)) return value.map(normalized);
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, normalized(v)]));
  return value;
}

/** The example's variables with its placeholder IDs replaced by real ones. */
function withIds(value: unknown, ids: Record<string, string>): unknown {
  if (typeof value === 'string') return ids[value] ?? value;
  if (Array.isArray(value)) return value.map((v) => withIds(v, ids));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withIds(v, ids)]));
  return value;
}

/** Where `expected` holds a placeholder of an ID an example returns, the real one from `actual`. */
function learnIds(expected: unknown, actual: unknown, ids: Record<string, string>) {
  if (typeof expected === 'string' && RETURNED_IDS.includes(expected) && typeof actual === 'string') ids[expected] ??= actual;
  else if (expected && typeof expected === 'object' && actual && typeof actual === 'object') {
    for (const [key, value] of Object.entries(expected)) learnIds(value, (actual as Record<string, unknown>)[key], ids);
  }
}

describe('docs/api.md', () => {
  it('is what `npm run docs` prints from the schema and docs/examples.ts', () => {
    expect(readFileSync(DOCS_FILE, 'utf8')).toBe(printDocs());
  });

  it('has a worked example for every mutation and subscription, each a valid operation on that field', () => {
    const fields = [
      ...Object.keys(schema.getMutationType()?.getFields() ?? {}).map((name) => `mutation ${name}`),
      ...Object.keys(schema.getSubscriptionType()?.getFields() ?? {}).map((name) => `subscription ${name}`),
    ].sort();
    expect([...new Set(EXAMPLES.filter((e) => e.kind !== 'query').map((e) => `${e.kind} ${e.field}`))].sort()).toEqual(fields);
    for (const example of EXAMPLES) {
      const document = parse(example.document);
      expect(validate(schema, document).map((e) => e.message)).toEqual([]);
      expect(example.document).toMatch(new RegExp(`^${example.kind} [^{]*\\{\\s*${example.field}\\(`));
    }
  });
});

describe(`the worked examples of docs/api.md run as written (${backend.label})`, () => {
  let app: TestApp;
  const ids: Record<string, string> = {};
  useTestApp(async (created) => {
    app = created;
    const Create = 'mutation ($input: CreateSessionInput!) { createSession(input: $input) { id } }';
    const seeded = await gqlOk<{ createSession: { id: string; messages: { edges: { node: { id: string } }[] } } }, unknown>(
      app,
      'mutation ($input: CreateSessionInput!) { createSession(input: $input) { id messages(first: 4) { edges { node { id } } } } }',
      { input: { title: 'Trip planning', messages: SEEDED_MESSAGES } },
    );
    ids[SESSION_ID] = seeded.createSession.id;
    ids[ANSWER_MESSAGE_ID] = seeded.createSession.messages.edges[3].node.id;
    const generating = await gqlOk<{ createSession: { id: string } }, unknown>(app, Create, {
      input: { messages: [{ role: 'USER', text: 'And day 3?' }] },
    });
    const Append = 'mutation ($input: AppendMessagesInput!) { appendMessages(input: $input) { messages { id } } }';
    const appended = await gqlOk<{ appendMessages: { messages: { id: string }[] } }, unknown>(app, Append, {
      input: { sessionId: generating.createSession.id, messages: [{ role: 'ASSISTANT', text: '', generating: true }] },
    });
    ids[GENERATING_MESSAGE_ID] = appended.appendMessages.messages[0].id;
    const filed = await gqlOk<{ createSession: { messages: { edges: { node: { parts: { attachment: { id: string } }[] } }[] } } }, unknown>(
      app,
      `mutation ($input: CreateSessionInput!) {
        createSession(input: $input) { messages(first: 1) { edges { node { parts { ... on AttachmentPart { attachment { id } } } } } } }
      }`,
      { input: { messages: [{ role: 'USER', parts: [{ attachment: SEEDED_ATTACHMENT }] }] } },
    );
    ids[ATTACHMENT_ID] = filed.createSession.messages.edges[0].node.parts[0].attachment.id;
  });

  // In the order the examples are written: later ones build on earlier ones (compact, then assemble).
  for (const example of EXAMPLES.filter((e) => e.kind !== 'subscription')) {
    it(`${example.field}`, async () => {
      const data = await gqlOk(app, example.document, withIds(example.variables, ids));
      expect(normalized(data)).toEqual(normalized(example.response));
      learnIds(example.response, data, ids);
    });
  }

  for (const example of EXAMPLES.filter((e) => e.kind === 'subscription')) {
    it(`${example.field} (over SSE)`, async () => {
      const Create = 'mutation ($input: CreateSessionInput!) { createSession(input: $input) { id } }';
      const session = await gqlOk<{ createSession: { id: string } }, unknown>(app, Create, { input: { messages: SEEDED_MESSAGES } });
      const own = { [SESSION_ID]: session.createSession.id };
      for (const step of example.before ?? []) await gqlOk(app, step.document, withIds(step.variables, own));
      const variables = withIds(example.variables, own) as Record<string, unknown>;
      const sse = subscribeSse(app.yoga.fetch as never, example.document, variables, (data) => data);
      try {
        const [first] = await sse.collector.until((events) => events.length >= 1);
        expect(normalized(first)).toEqual(normalized(example.response));
      } finally {
        sse.unsubscribe();
      }
    });
  }
});
