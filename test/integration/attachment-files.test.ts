import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { API_KEYS, backend, gqlError, gqlOk, type TestApp, TWO_WORKSPACES, useTestApp } from '../helpers/app.js';
import { JPEG_HEAD, makePdf, makePng } from '../helpers/images.js';

/**
 * Images and files, as a client sends them over HTTP: base64 in JSON and multipart uploads (the
 * GraphQL multipart request spec), the checks before anything is stored, one copy per workspace,
 * and `/attachments/<id>` serving the bytes back under the key and workspace rules.
 */
let app: TestApp;
const alpha = { apiKey: API_KEYS.alpha };
const beta = { apiKey: API_KEYS.beta };

useTestApp(
  (built) => {
    app = built;
  },
  { apiKeys: TWO_WORKSPACES },
);

const PNG = makePng(1024, 768);
const PNG_SHA = createHash('sha256').update(PNG).digest('hex');
const origin = () => new URL(app.url).origin;

const ATTACHMENT_FIELDS = 'id name mimeType size kind sha256 width height pages url sourceUrl providerFile { provider fileId }';
interface AttachmentOut {
  id: string;
  name: string;
  mimeType: string;
  size: number;
  kind: string;
  sha256: string;
  width: number | null;
  height: number | null;
  pages: number | null;
  url: string;
  sourceUrl: string | null;
  providerFile: { provider: string; fileId: string } | null;
}

const CREATE = `mutation($title: String) { createSession(input: { title: $title }) { id } }`;
const APPEND = `mutation($input: AppendMessagesInput!) {
  appendMessages(input: $input) { messages { id parts { ... on AttachmentPart { attachment { ${ATTACHMENT_FIELDS} } } } } }
}`;
const COUNT = `query($id: ID!) { session(id: $id) { messageCount } }`;

async function newSession(as = alpha): Promise<string> {
  return (await gqlOk<{ createSession: { id: string } }, unknown>(app, CREATE, { title: 'files' }, as)).createSession.id;
}

type AppendOut = { appendMessages: { messages: { id: string; parts: { attachment?: AttachmentOut }[] }[] } };

async function appendAttachment(sessionId: string, attachment: Record<string, unknown>, as = alpha): Promise<AttachmentOut> {
  const input = { sessionId, messages: [{ role: 'USER', parts: [{ text: { text: 'look' } }, { attachment }] }] };
  const out = await gqlOk<AppendOut, unknown>(app, APPEND, { input }, as);
  return out.appendMessages.messages[0].parts[1].attachment!;
}

/** appendMessages as a multipart request: the file mapped onto the `upload` of the second part. */
async function uploadAttachment(sessionId: string, file: Buffer, name: string, mimeType: string, headers: Record<string, string> = {}) {
  const form = new FormData();
  const variables = {
    input: {
      sessionId,
      messages: [{ role: 'USER', parts: [{ text: { text: 'look' } }, { attachment: { name, mimeType, upload: null } }] }],
    },
  };
  form.set('operations', JSON.stringify({ query: APPEND, variables }));
  form.set('map', JSON.stringify({ 0: ['variables.input.messages.0.parts.1.attachment.upload'] }));
  form.set('0', new Blob([new Uint8Array(file)], { type: mimeType }), name);
  const response = await fetch(app.url, {
    method: 'POST',
    body: form,
    headers: { authorization: `Bearer ${API_KEYS.alpha}`, 'graphql-require-preflight': '1', ...headers },
  });
  const text = await response.text();
  let body: { data?: AppendOut; errors?: { message: string; extensions?: { code?: string } }[] } = {};
  try {
    body = JSON.parse(text);
  } catch {
    body = { errors: [{ message: text }] };
  }
  return { status: response.status, body };
}

const get = (path: string, headers: Record<string, string> = {}, key: string | null = API_KEYS.alpha) =>
  fetch(`${origin()}${path}`, { headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers }, redirect: 'manual' });

const countBlobs = async () =>
  Number((await app.runtime.db.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM "AttachmentBlob"'))[0].n);

describe(`images and files (${backend.label})`, () => {
  it('a 1024×768 PNG sent as base64 and uploaded with multipart is stored once, measured, and served back byte for byte', async () => {
    const sessionId = await newSession();
    const blobsBefore = await countBlobs();
    const sent = await appendAttachment(sessionId, { name: 'chart.png', mimeType: 'image/png', data: PNG.toString('base64') });
    expect(sent).toMatchObject({ kind: 'BYTES', sha256: PNG_SHA, width: 1024, height: 768, size: PNG.length, mimeType: 'image/png' });
    expect(sent.url).toBe(`/attachments/${encodeURIComponent(sent.id)}`);

    const uploaded = await uploadAttachment(sessionId, PNG, 'chart-again.png', 'image/png');
    expect(uploaded.status).toBe(200);
    expect(uploaded.body.errors).toBeUndefined();
    const again = uploaded.body.data!.appendMessages.messages[0].parts[1].attachment!;
    expect(again).toMatchObject({ kind: 'BYTES', sha256: PNG_SHA, width: 1024, height: 768 });
    expect(again.id).not.toBe(sent.id);
    expect(await countBlobs()).toBe(blobsBefore + 1);

    for (const attachment of [sent, again]) {
      const response = await get(attachment.url);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('image/png');
      expect(response.headers.get('etag')).toBe(`"${PNG_SHA}"`);
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      expect(Buffer.from(await response.arrayBuffer()).equals(PNG)).toBe(true);
    }
  });

  it('serves ranges, revalidates by ETag, and keeps to the key and workspace rules', async () => {
    const sessionId = await newSession();
    const sent = await appendAttachment(sessionId, { name: 'r.png', mimeType: 'image/png', data: PNG.toString('base64') });
    const part = await get(sent.url, { range: 'bytes=8-23' });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe(`bytes 8-23/${PNG.length}`);
    expect(Buffer.from(await part.arrayBuffer()).equals(PNG.subarray(8, 24))).toBe(true);
    const tail = await get(sent.url, { range: 'bytes=-12' });
    expect(tail.status).toBe(206);
    expect(Buffer.from(await tail.arrayBuffer()).equals(PNG.subarray(PNG.length - 12))).toBe(true);
    const past = await get(sent.url, { range: `bytes=${PNG.length}-` });
    expect(past.status).toBe(416);
    expect(past.headers.get('content-range')).toBe(`bytes */${PNG.length}`);
    expect((await get(sent.url, { 'if-none-match': `"${PNG_SHA}"` })).status).toBe(304);
    const head = await fetch(`${origin()}${sent.url}`, { method: 'HEAD', headers: { authorization: `Bearer ${API_KEYS.alpha}` } });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(PNG.length));

    const other = await get(sent.url, {}, API_KEYS.beta);
    expect(other.status).toBe(404);
    expect((await other.json()).errors[0].extensions.code).toBe('NOT_FOUND');
    expect((await get(sent.url, {}, null)).status).toBe(401);
    expect((await get('/attachments/not-an-id')).status).toBe(404);
    // The GraphQL side says the same: another workspace has no such node.
    const node = await gqlOk<{ node: unknown }, unknown>(app, 'query($id: ID!) { node(id: $id) { id } }', { id: sent.id }, beta);
    expect(node.node).toBeNull();
  });

  it('refuses a JPEG declared image/png, a 3-byte "PDF", bad base64 and two sources, storing nothing', async () => {
    const sessionId = await newSession();
    const cases: [Record<string, unknown>, RegExp][] = [
      [
        { name: 'x.png', mimeType: 'image/png', data: Buffer.concat([JPEG_HEAD, Buffer.alloc(64)]).toString('base64') },
        /JPEG image \(image\/jpeg\), not image\/png/,
      ],
      [{ name: 'x.pdf', mimeType: 'application/pdf', data: Buffer.from('PDF').toString('base64') }, /not application\/pdf/],
      [{ name: 'x.png', mimeType: 'image/png', data: 'iVBORw0KGgo=!!' }, /not base64/],
      [{ name: 'x.png', mimeType: 'image/png', data: PNG.subarray(0, 16).toString('base64') }, /dimensions .* cannot be read/],
      [
        { name: 'x.txt', mimeType: 'text/plain', content: 'hi', url: 'https://example.com/x.txt' },
        /exactly one of content, data, url, providerFile, upload/,
      ],
      [{ name: 'x.png', mimeType: 'image/png', url: 'http://example.com/x.png' }, /must be an https URL/],
      [{ name: 'x.pdf', mimeType: 'application/pdf', providerFile: { provider: 'acme', fileId: 'f1' } }, /provider "acme" is not one of/],
    ];
    for (const [attachment, message] of cases) {
      const input = { sessionId, messages: [{ role: 'USER', parts: [{ text: { text: 'look' } }, { attachment }] }] };
      const error = await gqlError(app, APPEND, { input }, alpha);
      expect(error.code).toBe('BAD_USER_INPUT');
      expect(error.message).toMatch(message);
      expect(error.message).toContain('messages[0].parts[1].attachment');
    }
    const count = await gqlOk<{ session: { messageCount: number } }, unknown>(app, COUNT, { id: sessionId }, alpha);
    expect(count.session.messageCount).toBe(0);
  });

  it('refuses an upload as it streams past the cap (413, BAD_USER_INPUT), and a multipart request without a CSRF header', async () => {
    const sessionId = await newSession();
    const big = Buffer.concat([PNG, Buffer.alloc(backend.caps.fileBytes + 1024 - PNG.length)]);
    const refused = await uploadAttachment(sessionId, big, 'big.png', 'image/png');
    expect(refused.status).toBe(413);
    expect(refused.body.errors?.[0].extensions?.code).toBe('BAD_USER_INPUT');
    expect(refused.body.errors?.[0].message).toMatch(/larger than \d+ bytes/);

    const form = new FormData();
    form.set('operations', JSON.stringify({ query: '{ __typename }' }));
    form.set('map', '{}');
    const csrf = await fetch(app.url, { method: 'POST', body: form, headers: { authorization: `Bearer ${API_KEYS.alpha}` } });
    expect(csrf.status).toBe(403);
    const count = await gqlOk<{ session: { messageCount: number } }, unknown>(app, COUNT, { id: sessionId }, alpha);
    expect(count.session.messageCount).toBe(0);
  });

  it('keeps a PDF with its page count, a URL and a provider file as references, and a UTF-8 text upload as text', async () => {
    const sessionId = await newSession();
    const pdf = makePdf(3);
    const doc = await appendAttachment(sessionId, { name: 'report.pdf', mimeType: 'application/pdf', data: pdf.toString('base64') });
    expect(doc).toMatchObject({ kind: 'BYTES', pages: 3, width: null, height: null, size: pdf.length });
    const served = await get(doc.url);
    expect(served.headers.get('content-type')).toBe('application/pdf');
    expect(Buffer.from(await served.arrayBuffer()).equals(pdf)).toBe(true);

    const url = await appendAttachment(sessionId, { name: 'cat.jpg', mimeType: 'image/jpeg', url: 'https://example.com/cat.jpg' });
    expect(url).toMatchObject({ kind: 'URL', sourceUrl: 'https://example.com/cat.jpg', size: 0, width: null });
    const redirect = await get(url.url);
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get('location')).toBe('https://example.com/cat.jpg');

    const file = await appendAttachment(sessionId, {
      name: 'spec.pdf',
      mimeType: 'application/pdf',
      providerFile: { provider: 'openai', fileId: 'file-abc123' },
    });
    expect(file).toMatchObject({ kind: 'PROVIDER_FILE', providerFile: { provider: 'openai', fileId: 'file-abc123' } });
    expect((await get(file.url)).status).toBe(404);

    const text = await uploadAttachment(sessionId, Buffer.from('# Notes\nnaïve café\n', 'utf8'), 'notes.md', 'text/markdown');
    expect(text.status).toBe(200);
    const notes = text.body.data!.appendMessages.messages[0].parts[1].attachment!;
    expect(notes).toMatchObject({ kind: 'TEXT', size: Buffer.byteLength('# Notes\nnaïve café\n') });
    const servedText = await get(notes.url);
    expect(servedText.headers.get('content-type')).toBe('text/markdown; charset=utf-8');
    expect(await servedText.text()).toBe('# Notes\nnaïve café\n');
  });

  it('keeps bytes while any attachment of the workspace holds them, and lets them go with the last', async () => {
    const png = makePng(64, 48);
    const sha = createHash('sha256').update(png).digest('hex');
    const blobsOf = async () =>
      Number(
        (await app.runtime.db.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM "AttachmentBlob" WHERE sha256 = $1', [sha]))[0].n,
      );
    const first = await newSession();
    const second = await newSession();
    await appendAttachment(first, { name: 'a.png', mimeType: 'image/png', data: png.toString('base64') });
    const kept = await appendAttachment(second, { name: 'b.png', mimeType: 'image/png', data: png.toString('base64') });
    expect(await blobsOf()).toBe(1);
    const DELETE = 'mutation($id: ID!) { deleteSession(input: { sessionId: $id }) { deletedSessionIds } }';
    await gqlOk(app, DELETE, { id: first }, alpha);
    expect(await blobsOf()).toBe(1);
    expect(Buffer.from(await (await get(kept.url)).arrayBuffer()).equals(png)).toBe(true);
    await gqlOk(app, DELETE, { id: second }, alpha);
    expect(await blobsOf()).toBe(0);
  });

  it('sends an image and a PDF in each format as the provider blocks, counts the image by the rule, and records the turn without the bytes', async () => {
    const sessionId = await newSession();
    const b64 = PNG.toString('base64');
    const pdf = makePdf(2).toString('base64');
    const SEED = `mutation($input: AppendMessagesInput!) { appendMessages(input: $input) { messages { id } } }`;
    const withImage = [
      {
        role: 'USER',
        parts: [
          { text: { text: 'What is in this chart?' } },
          { attachment: { name: 'chart.png', mimeType: 'image/png', data: b64 } },
          { attachment: { name: 'r.pdf', mimeType: 'application/pdf', data: pdf } },
        ],
      },
      { role: 'ASSISTANT', parts: [{ toolCall: { callId: 'c1', name: 'zoom', arguments: { x: 1 } } }] },
      {
        role: 'TOOL',
        parts: [
          { toolResult: { callId: 'c1', content: 'zoomed' } },
          { attachment: { name: 'zoom.png', mimeType: 'image/png', data: makePng(200, 100).toString('base64') } },
        ],
      },
    ];
    await gqlOk(app, SEED, { input: { sessionId, messages: withImage } }, alpha);
    const plain = await newSession();
    await gqlOk(
      app,
      SEED,
      {
        input: {
          sessionId: plain,
          messages: [
            {
              role: 'USER',
              parts: [
                { text: { text: 'What is in this chart?' } },
                { attachment: { name: 'r.pdf', mimeType: 'application/pdf', data: pdf } },
              ],
            },
          ],
        },
      },
      alpha,
    );

    const ASSEMBLE = `mutation($input: AssembleContextInput!) {
      assembleContext(input: $input) {
        tokenCount contextHash payload
        messages { tokenCount parts { __typename ... on AttachmentPart { attachment { name kind } } } }
        attachmentProblems { problem detail name }
      }
    }`;
    type Out = {
      assembleContext: {
        tokenCount: number;
        contextHash: string;
        payload: unknown;
        messages: { tokenCount: number; parts: { __typename: string; attachment?: { name: string; kind: string } }[] }[];
        attachmentProblems: { problem: string; detail: string; name: string }[];
      };
    };
    const assemble = async (id: string, format: string, extra: Record<string, unknown> = {}) =>
      (await gqlOk<Out, unknown>(app, ASSEMBLE, { input: { sessionId: id, format, ...extra } }, alpha)).assembleContext;

    const blocks: Record<string, string> = {
      OPENAI_CHAT: '"type":"image_url"',
      OPENAI_RESPONSES: '"type":"input_image"',
      ANTHROPIC_MESSAGES: '"type":"image"',
      GEMINI: '"inlineData"',
    };
    for (const [format, block] of Object.entries(blocks)) {
      const context = await assemble(sessionId, format);
      const text = JSON.stringify(context.payload);
      expect(text, format).toContain(block);
      expect(text, format).toContain(b64);
      expect(text, format).toContain(pdf);
      // The parts name the attachment; its bytes are in the payload only.
      expect(
        context.messages.flatMap((m) => m.parts.filter((p) => p.attachment).map((p) => p.attachment!.name)),
        format,
      ).toContain('chart.png');
      // Chat Completions and Gemini take no image in a tool's answer: reported, never a refused payload.
      const toolImage = context.attachmentProblems.filter((p) => p.name === 'zoom.png').map((p) => p.problem);
      expect(toolImage, format).toEqual(format === 'OPENAI_CHAT' || format === 'GEMINI' ? ['NOT_SENDABLE'] : []);
    }
    // OpenAI's rule for 1024×768 at detail auto (high): 85 + 170 × 4 tiles.
    const [withPng, withoutPng] = [await assemble(sessionId, 'OPENAI_CHAT'), await assemble(plain, 'OPENAI_CHAT')];
    expect(withPng.messages[0].tokenCount - withoutPng.messages[0].tokenCount).toBe(765);

    // A turn records its context naming the bytes by attachment, not carrying them again.
    const turn = await gqlOk<{ startTurn: { id: string } }, unknown>(
      app,
      'mutation($s: ID!) { startTurn(input: { sessionId: $s, agentIds: ["a"] }) { id } }',
      { s: sessionId },
      alpha,
    );
    const served = await assemble(sessionId, 'ANTHROPIC_MESSAGES', { turnId: turn.startTurn.id });
    const recorded = await gqlOk<{ node: { context: { contextHash: string; payload: unknown } } }, unknown>(
      app,
      'query($id: ID!) { node(id: $id) { ... on Turn { context { contextHash payload } } } }',
      { id: turn.startTurn.id },
      alpha,
    );
    expect(recorded.node.context.contextHash).toBe(served.contextHash);
    expect(JSON.stringify(recorded.node.context.payload)).not.toContain(b64.slice(0, 200));
    expect(JSON.stringify(recorded.node.context.payload)).toContain('attachment:');
  });
});
