import { describe, expect, it } from 'vitest';
import { attachmentToolTokens, canonicalJson } from '../../src/domain/assembly/index.js';
import { createHash } from 'node:crypto';
import { API_KEYS, backend, gql, gqlError, gqlOk, type TestApp, useTestApp, TWO_WORKSPACES } from '../helpers/app.js';

/**
 * Attachments by reference, end to end: assembleContext with attachmentMode REFERENCE and the
 * read_attachment tool, then the agent's side of the tool, `attachment(id) { content }`.
 */
let app: TestApp;
const alpha = { apiKey: API_KEYS.alpha };
const beta = { apiKey: API_KEYS.beta };

useTestApp(
  (built) => {
    app = built;
  },
  {
    apiKeys: TWO_WORKSPACES,
  },
);

/** 5,000 code points of mixed text: ASCII, accents, CJK and astral emoji (two UTF-16 units each). */
const LONG = Array.from({ length: 1_000 }, (_, i) => ['a', 'é', '日', '😀', '\n'][i % 5].repeat(5)).join('');
const LONG_CHARS = [...LONG].length;

interface Ctx {
  tokenCount: number;
  toolTokenCount: number;
  contextHash: string;
  payload: { messages: unknown[]; tools?: unknown[] };
  messages: { kind: string; tokenCount: number; text: string; sourceIndex: number | null }[];
  decisions: { decision: string }[];
  attachmentProblems: { problem: string }[];
}

const ASSEMBLE = `mutation($input: AssembleContextInput!) {
  assembleContext(input: $input) {
    tokenCount toolTokenCount contextHash payload
    messages { kind tokenCount text sourceIndex }
    decisions { decision }
    attachmentProblems { problem }
  }
}`;

const assemble = async (input: Record<string, unknown>, as = alpha) =>
  (await gqlOk<{ assembleContext: Ctx }, unknown>(app, ASSEMBLE, { input }, as)).assembleContext;

const READ = `query($id: ID!, $offset: Int, $length: Int) {
  attachment(id: $id) { id name mimeType size content(offset: $offset, length: $length) { offset length text totalLength hasMore nextOffset } }
}`;
interface Page {
  offset: number;
  length: number;
  text: string;
  totalLength: number;
  hasMore: boolean;
  nextOffset: number | null;
}
const read = async (id: string, offset?: number, length?: number, as = alpha) =>
  (
    await gqlOk<{ attachment: { id: string; name: string; mimeType: string; size: number; content: Page | null } }, unknown>(
      app,
      READ,
      { id, offset, length },
      as,
    )
  ).attachment;

/** A session whose first user message carries `log.txt` (LONG) and `notes.md`; returns its ID and the attachments' IDs. */
async function sessionWithAttachments(as = alpha) {
  const created = await gqlOk<
    { createSession: { id: string; messages: { edges: { node: { parts: { attachment?: { id: string; name: string } }[] } }[] } } },
    unknown
  >(
    app,
    `mutation($input: CreateSessionInput!) {
      createSession(input: $input) { id messages(first: 10) { edges { node { parts { ... on AttachmentPart { attachment { id name } } } } } } }
    }`,
    {
      input: {
        title: 'files',
        messages: [
          {
            role: 'USER',
            parts: [
              { text: { text: 'Here are the log and my notes.' } },
              { attachment: { name: 'log.txt', mimeType: 'text/plain', content: LONG } },
              { attachment: { name: 'notes.md', mimeType: 'text/markdown', content: '# Notes\nshort' } },
            ],
          },
          { role: 'ASSISTANT', text: 'Thanks, I will look.' },
          { role: 'USER', text: 'What does the log say?' },
        ],
      },
    },
    as,
  );
  const attachments = created.createSession.messages.edges[0].node.parts.flatMap((p) => (p.attachment ? [p.attachment] : []));
  return { sessionId: created.createSession.id, log: attachments[0].id, notes: attachments[1].id };
}

describe(`attachments by reference (${backend.label})`, () => {
  it('REFERENCE gives reference blocks with the attachment IDs, and the tool in both provider shapes', async () => {
    const { sessionId, log, notes } = await sessionWithAttachments();
    const openai = await assemble({ sessionId, format: 'OPENAI_CHAT', attachmentMode: 'REFERENCE', includeAttachmentTool: true });
    const first = openai.payload.messages[0] as { role: string; content: { type: string; text: string }[] };
    expect(first.role).toBe('user');
    expect(first.content[1].text).toBe(
      `<attachment_ref id="${log}" name="log.txt" mime="text/plain" bytes="${Buffer.byteLength(LONG)}" chars="${LONG_CHARS}">\n` +
        'Not inlined. To read it, call read_attachment with this id, an offset and a length (in characters, at most 65536 per call).\n' +
        '</attachment_ref>',
    );
    expect(first.content[2].text).toContain(`id="${notes}" name="notes.md" mime="text/markdown" bytes="13" chars="13"`);
    expect(JSON.stringify(openai.payload)).not.toContain('日日日');
    expect(openai.payload.tools).toEqual([
      {
        type: 'function',
        function: expect.objectContaining({ name: 'read_attachment', parameters: expect.objectContaining({ required: ['id'] }) }),
      },
    ]);
    expect(openai.toolTokenCount).toBe(attachmentToolTokens('OPENAI_CHAT', 'O200K_BASE'));
    expect(openai.tokenCount).toBe(openai.messages.reduce((sum, m) => sum + m.tokenCount, 3) + openai.toolTokenCount);
    expect(openai.contextHash).toBe(
      createHash('sha256')
        .update(canonicalJson({ encoding: 'O200K_BASE', format: 'OPENAI_CHAT', payload: openai.payload }))
        .digest('hex'),
    );
    expect(openai.attachmentProblems).toEqual([]);

    const anthropic = await assemble({ sessionId, format: 'ANTHROPIC_MESSAGES', attachmentMode: 'REFERENCE', includeAttachmentTool: true });
    expect(anthropic.payload.tools).toEqual([
      { name: 'read_attachment', description: expect.any(String), input_schema: expect.objectContaining({ type: 'object' }) },
    ]);
    const anthropicFirst = anthropic.payload.messages[0] as { content: { text: string }[] };
    expect(anthropicFirst.content[1].text).toBe(first.content[1].text);
    expect(anthropic.toolTokenCount).toBe(attachmentToolTokens('ANTHROPIC_MESSAGES', 'O200K_BASE'));

    // INLINE stays the default, with neither references nor tools.
    const inline = await assemble({ sessionId, format: 'OPENAI_CHAT' });
    expect(JSON.stringify(inline.payload)).toContain('<attachment name=\\"log.txt\\"');
    expect(inline.payload.tools).toBeUndefined();
    expect(inline.toolTokenCount).toBe(0);
    expect(inline.tokenCount).toBeGreaterThan(openai.tokenCount);
  });

  it('fits the budget with the reference blocks: kept by reference where inline drops the message', async () => {
    const { sessionId } = await sessionWithAttachments();
    const full = await assemble({ sessionId, format: 'OPENAI_CHAT', attachmentMode: 'REFERENCE' });
    const fitted = await assemble({ sessionId, format: 'OPENAI_CHAT', attachmentMode: 'REFERENCE', maxTokens: full.tokenCount });
    expect(fitted.decisions.map((d) => d.decision)).toEqual(['KEPT', 'KEPT', 'KEPT']);
    expect(fitted.tokenCount).toBe(full.tokenCount);
    const tight = await assemble({ sessionId, format: 'OPENAI_CHAT', attachmentMode: 'REFERENCE', maxTokens: full.tokenCount - 1 });
    expect(tight.decisions[0].decision).toBe('DROPPED_BUDGET');
    const inline = await assemble({ sessionId, format: 'OPENAI_CHAT', maxTokens: full.tokenCount });
    expect(inline.decisions[0].decision).toBe('DROPPED_BUDGET');
  });

  it('the agent reads an attachment in pages of characters (code points) until nextOffset is null', async () => {
    const { log } = await sessionWithAttachments();
    const first = await read(log, undefined, 777);
    expect(first).toMatchObject({ id: log, name: 'log.txt', mimeType: 'text/plain', size: Buffer.byteLength(LONG) });
    expect(first.content).toMatchObject({ offset: 0, length: 777, totalLength: LONG_CHARS, hasMore: true, nextOffset: 777 });
    let text = '';
    let offset: number | null = 0;
    let pages = 0;
    while (offset !== null) {
      const page: Page = (await read(log, offset, 777)).content!;
      expect([...page.text].length).toBe(page.length);
      text += page.text;
      offset = page.nextOffset;
      pages++;
    }
    expect(text).toBe(LONG);
    expect(pages).toBe(Math.ceil(LONG_CHARS / 777));
    // The defaults: from the start, 16,384 characters (the whole of this one).
    expect((await read(log)).content).toMatchObject({ offset: 0, length: LONG_CHARS, hasMore: false, nextOffset: null });
    // At the end: an empty last page.
    expect((await read(log, LONG_CHARS, 10)).content).toMatchObject({ text: '', length: 0, hasMore: false, nextOffset: null });
  });

  it('refuses bad offsets and lengths with BAD_USER_INPUT that names the attachment ID', async () => {
    const { log } = await sessionWithAttachments();
    const past = await gqlError(app, READ, { id: log, offset: LONG_CHARS + 1, length: 10 }, alpha);
    expect(past.code).toBe('BAD_USER_INPUT');
    expect(past.message).toBe(
      `offset ${LONG_CHARS + 1} is past the end of attachment ${log}, which has ${LONG_CHARS} characters: use an offset from 0 to ${LONG_CHARS}.`,
    );
    for (const [offset, length] of [
      [-1, 10],
      [0, 0],
      [0, 65_537],
      [2_147_483_647, 10],
    ]) {
      expect((await gqlError(app, READ, { id: log, offset, length }, alpha)).code).toBe('BAD_USER_INPUT');
    }
  });

  it('bounds the content one request may ask for', async () => {
    const { log } = await sessionWithAttachments();
    const fields = Array.from({ length: 17 }, (_, i) => `p${i}: content(offset: ${i}, length: 65536) { length }`).join(' ');
    const result = await gql(app, `query($id: ID!) { attachment(id: $id) { ${fields} } }`, { id: log }, alpha);
    expect(result.errors?.map((e) => e.extensions?.code)).toEqual(['BAD_USER_INPUT']);
    expect(result.errors?.[0].message).toContain('At most 1048576 characters of attachment content');
  });

  it('reads several pages in one statement', async () => {
    const { log, notes } = await sessionWithAttachments();
    const queries = app.runtime.db.queries;
    queries.reset();
    const data = await gqlOk<Record<string, { content: { text: string } }>, unknown>(
      app,
      `query($log: ID!, $notes: ID!) {
        a: node(id: $log) { ... on Attachment { c1: content(offset: 0, length: 5) { text } c2: content(offset: 5, length: 5) { text } } }
        b: node(id: $notes) { ... on Attachment { content { text } } }
      }`,
      { log, notes },
      alpha,
    );
    expect(data.b.content.text).toBe('# Notes\nshort');
    expect(queries.statements.filter((s) => s.includes('substr('))).toHaveLength(1);
  });

  it('is scoped to the workspace: NOT_FOUND from attachment(id:), null from node(id:)', async () => {
    const { log, sessionId } = await sessionWithAttachments();
    const foreign = await gqlError(app, READ, { id: log }, beta);
    expect(foreign.code).toBe('NOT_FOUND');
    expect(foreign.message).toBe(`Attachment ${log} was not found.`);
    expect(JSON.stringify(foreign)).not.toContain('日');
    expect(await gqlOk(app, 'query($id: ID!) { node(id: $id) { id } }', { id: log }, beta)).toEqual({ node: null });
    expect((await gqlError(app, READ, { id: sessionId }, alpha)).code).toBe('NOT_FOUND');
    expect((await gqlError(app, READ, { id: 'not an id' }, alpha)).code).toBe('BAD_USER_INPUT');
    const own = await gqlOk<{ node: { __typename: string; id: string; name: string } }, unknown>(
      app,
      'query($id: ID!) { node(id: $id) { __typename id ... on Attachment { name } } }',
      { id: log },
      alpha,
    );
    expect(own.node).toEqual({ __typename: 'Attachment', id: log, name: 'log.txt' });
  });

  it("a fork refers to its parent's attachments by the same ID, and can read them", async () => {
    const { sessionId, log } = await sessionWithAttachments();
    const forked = await gqlOk<{ forkSession: { session: { id: string } } }, unknown>(
      app,
      'mutation($input: ForkSessionInput!) { forkSession(input: $input) { session { id } } }',
      { input: { sessionId, messageIndex: 2 } },
      alpha,
    );
    await gqlOk(
      app,
      'mutation($input: AppendMessagesInput!) { appendMessages(input: $input) { messages { id } } }',
      { input: { sessionId: forked.forkSession.session.id, messages: [{ role: 'USER', text: 'Summarize the log instead.' }] } },
      alpha,
    );
    const ctx = await assemble({ sessionId: forked.forkSession.session.id, format: 'ANTHROPIC_MESSAGES', attachmentMode: 'REFERENCE' });
    expect(JSON.stringify(ctx.payload)).toContain(`id=\\"${log}\\"`);
    expect((await read(log, 0, 3)).content?.length).toBe(3);
  });

  it('reports a missing attachment in REFERENCE mode as in INLINE, naming its ID', async () => {
    const { sessionId, notes } = await sessionWithAttachments();
    await app.runtime.db.prisma.attachment.deleteMany({
      where: { name: 'notes.md', id: Buffer.from(notes, 'base64').toString().split(':')[1] },
    });
    const ctx = await assemble({ sessionId, attachmentMode: 'REFERENCE' });
    expect(ctx.attachmentProblems).toEqual([{ problem: 'MISSING' }]);
    expect(JSON.stringify(ctx.payload)).toContain('omitted=\\"missing\\"');
  });
});
