import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { API_KEYS, backend, gqlOk, type TestApp, TWO_WORKSPACES, useTestApp } from '../helpers/app.js';

/**
 * ChatGPT's and Claude's data exports imported over HTTP (`POST /import?from=…`), from real samples
 * kept under test/fixtures/ (their sources are named in its README): ChatGPT's `mapping` tree
 * becomes a root session and a fork per branch, each with the messages that branch shows.
 */
let app: TestApp;
useTestApp(
  (built) => {
    app = built;
  },
  { apiKeys: TWO_WORKSPACES },
);

const fixture = (path: string) => readFileSync(new URL(`../fixtures/${path}`, import.meta.url), 'utf8');

async function importFrom(from: string, body: string) {
  const response = await fetch(`${new URL(app.url).origin}/import?from=${from}`, {
    method: 'POST',
    body,
    headers: { authorization: `Bearer ${API_KEYS.alpha}` },
  });
  return {
    status: response.status,
    body: (await response.json()) as { sessions?: { id: string; sourceId: string }[]; line?: number; message?: string },
  };
}

const SESSION = `query($id: ID!) {
  session(id: $id) { title kind forkIndex parent { id } messages(first: 50) { edges { node { role text createdAt } } } }
}`;
type SessionOut = {
  title: string;
  kind: string;
  forkIndex: number | null;
  parent: { id: string } | null;
  messages: { edges: { node: { role: string; text: string; createdAt: string } }[] };
};
const read = async (id: string) =>
  (await gqlOk<{ session: SessionOut }, unknown>(app, SESSION, { id }, { apiKey: API_KEYS.alpha })).session;
const texts = (s: SessionOut) => s.messages.edges.map((e) => `${e.node.role}: ${e.node.text.slice(0, 24)}`);

describe(`importers (${backend.label})`, () => {
  it('imports a ChatGPT export with two branches as a root and a fork per branch, with the messages each branch shows', async () => {
    const out = await importFrom('chatgpt', fixture('chatgpt/chatgpt-tree.json'));
    expect(out.status).toBe(200);
    const [root, edited, regenerated] = out.body.sessions!;
    expect(out.body.sessions).toHaveLength(3);
    const rootSession = await read(root.id);
    expect(rootSession).toMatchObject({ title: 'Assist user with summary', kind: 'ROOT', parent: null });
    // The path to current_node; the hidden empty system message is left out.
    expect(texts(rootSession)).toEqual([
      'USER: hi there',
      'ASSISTANT: Hello! How can I assist ',
      'USER: hi again',
      "ASSISTANT: Hey! Welcome back. What'",
      'USER: tell me a joke',
      "ASSISTANT: Sure, here's one for you",
    ]);
    expect(rootSession.messages.edges[0].node.createdAt).toBe(new Date(1714585031150.442).toISOString());
    // The edited user message ("so cool bro" instead of "hi again"): cut at that USER message.
    const editedSession = await read(edited.id);
    expect(editedSession).toMatchObject({
      kind: 'FORK',
      forkIndex: 2,
      parent: { id: root.id },
      title: 'Assist user with summary (fork 1)',
    });
    expect(texts(editedSession)).toEqual([
      'USER: hi there',
      'ASSISTANT: Hello! How can I assist ',
      'USER: so cool bro',
      'ASSISTANT: Thanks! What brings you ',
      'USER: tell me a story',
      "ASSISTANT: Sure! Here's a short sto",
    ]);
    // The regenerated answer: cut at the USER message it answers, which the fork repeats.
    const regeneratedSession = await read(regenerated.id);
    expect(regeneratedSession).toMatchObject({ kind: 'FORK', forkIndex: 4, parent: { id: root.id } });
    expect(texts(regeneratedSession)).toEqual([...texts(rootSession).slice(0, 5), "ASSISTANT: Sure, here's one for you"]);
    expect(regeneratedSession.messages.edges[5].node.createdAt).toBe(new Date(1714585056580.956).toISOString());
    // Imported branches are alternatives as branches made here are: the edited question beside the original.
    const ALTERNATIVES = `query($id: ID!) {
      session(id: $id) { messages(first: 3) {
        edges { node { text alternatives(first: 5) { totalCount edges { node { text session { id } } } } } } } }
    }`;
    const { session } = await gqlOk<
      {
        session: {
          messages: {
            edges: {
              node: { text: string; alternatives: { totalCount: number; edges: { node: { text: string; session: { id: string } } }[] } };
            }[];
          };
        };
      },
      unknown
    >(app, ALTERNATIVES, { id: edited.id }, { apiKey: API_KEYS.alpha });
    const atTwo = session.messages.edges[2].node;
    expect(atTwo.text).toBe('so cool bro');
    expect(atTwo.alternatives.totalCount).toBe(2);
    expect(atTwo.alternatives.edges.map((e) => [e.node.text, e.node.session.id])).toEqual([
      ['hi again', root.id],
      ['so cool bro', edited.id],
    ]);
    // The export holds no token counts: they are counted on import as an append counts them, so the
    // gauge (which reads stored counts) agrees with an assembly of each imported session.
    for (const { id } of out.body.sessions!) {
      const { session: s } = await gqlOk<{ session: { contextGauge: { usedTokens: number } } }, unknown>(
        app,
        `query($id: ID!) { session(id: $id) { contextGauge(format: OPENAI_CHAT) { usedTokens } } }`,
        { id },
        { apiKey: API_KEYS.alpha },
      );
      const { assembleContext } = await gqlOk<{ assembleContext: { tokenCount: number } }, unknown>(
        app,
        `mutation($id: ID!) { assembleContext(input: { sessionId: $id, format: OPENAI_CHAT }) { tokenCount } }`,
        { id },
        { apiKey: API_KEYS.alpha },
      );
      expect(s.contextGauge.usedTokens).toBe(assembleContext.tokenCount);
      expect(s.contextGauge.usedTokens).toBeGreaterThan(20);
    }
  });

  it('imports a Claude export: one session in file order, an attachment’s extracted text kept', async () => {
    const out = await importFrom('claude', fixture('claude/with-attachments.json'));
    expect(out.status).toBe(200);
    expect(out.body.sessions).toEqual([{ id: expect.any(String), sourceId: 'conv-02J9K0L1M2N3O4P5Q6R7S8T9' }]);
    const session = await read(out.body.sessions![0].id);
    expect(session).toMatchObject({ title: 'Code Review with File Attachment', kind: 'ROOT' });
    expect(session.messages.edges.map((e) => e.node.role)).toEqual(['USER', 'ASSISTANT', 'USER', 'ASSISTANT']);
    expect(session.messages.edges[0].node.text).toContain('[utils.py]\ndef parse_config(path):');
    expect(session.messages.edges[3].node.createdAt).toBe('2024-02-20T14:10:00.000Z');
  });

  it('imports a Claude conversation whose messages branch (parent_message_uuid) as a root and a fork', async () => {
    const base = JSON.parse(fixture('claude/with-attachments.json')) as { chat_messages: Record<string, unknown>[] };
    const [q, a, q2, a2] = base.chat_messages;
    const NO_PARENT = '00000000-0000-4000-8000-000000000000';
    const chat_messages = [
      { ...q, parent_message_uuid: NO_PARENT },
      { ...a, parent_message_uuid: q.uuid },
      { ...q2, parent_message_uuid: a.uuid },
      { ...a2, parent_message_uuid: q2.uuid },
      { ...q2, uuid: 'edited', text: 'Why Path and not os.path?', parent_message_uuid: a.uuid },
    ];
    const out = await importFrom('claude', JSON.stringify([{ ...base, chat_messages, current_leaf_message_uuid: a2.uuid }]));
    expect(out.status).toBe(200);
    expect(out.body.sessions).toHaveLength(2);
    const fork = await read(out.body.sessions![1].id);
    expect(fork).toMatchObject({ kind: 'FORK', forkIndex: 2 });
    expect(texts(fork).at(-1)).toBe('USER: Why Path and not os.path');
  });

  it('refuses what is not an export, storing nothing', async () => {
    expect(await importFrom('chatgpt', '{"not":"an export"')).toMatchObject({
      status: 400,
      body: { message: expect.stringContaining('not JSON') },
    });
    expect(await importFrom('claude', '[{"uuid":"x"}]')).toMatchObject({
      status: 400,
      body: { message: expect.stringContaining('chat_messages') },
    });
    expect(await importFrom('gemini', '[]')).toMatchObject({ status: 400 });
  });
});
