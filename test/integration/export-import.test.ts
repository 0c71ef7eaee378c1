import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { API_KEYS, backend, gqlError, gqlOk, rawIdOf, type TestApp, TWO_WORKSPACES, useTestApp } from '../helpers/app.js';
import { makePng } from '../helpers/images.js';

/**
 * Export and import over HTTP, as a client calls them: a tree of three sessions (a root with tool
 * calls, an image's bytes, a turn with usage, a compaction and a transform; a fork of it; a
 * sub-agent session in its turn) exported from one workspace, imported into another, exported
 * again equal but for ids, and assembling to the same contextHash; `importSessions` over GraphQL;
 * refusals with their line number that store nothing.
 */
let app: TestApp;
const alpha = { apiKey: API_KEYS.alpha };
const beta = { apiKey: API_KEYS.beta };
const READ_ONLY = 'alpha-reader-0123456789abcdef';

useTestApp(
  (built) => {
    app = built;
  },
  { apiKeys: [...TWO_WORKSPACES!, { workspace: 'alpha', key: READ_ONLY, scope: 'READ' }] },
);

const origin = () => new URL(app.url).origin;
const auth = (key: string) => ({ authorization: `Bearer ${key}` });

async function exportText(
  sessionId: string,
  key = API_KEYS.alpha,
  tree = true,
): Promise<{ status: number; type: string | null; text: string }> {
  const response = await fetch(`${origin()}/export/sessions/${encodeURIComponent(sessionId)}${tree ? '?tree=true' : ''}`, {
    headers: auth(key),
  });
  return { status: response.status, type: response.headers.get('content-type'), text: await response.text() };
}

async function importText(body: string, key = API_KEYS.beta, from?: string) {
  const response = await fetch(`${origin()}/import${from ? `?from=${from}` : ''}`, { method: 'POST', body, headers: auth(key) });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const CREATE = 'mutation($input: CreateSessionInput!) { createSession(input: $input) { id } }';
const APPEND = 'mutation($input: AppendMessagesInput!) { appendMessages(input: $input) { messages { id } } }';
const START = 'mutation($input: StartTurnInput!) { startTurn(input: $input) { id } }';
const USAGE = 'mutation($input: ReportUsageInput!) { reportUsage(input: $input) { id } }';
const COMPLETE = 'mutation($input: CompleteAgentInput!) { completeAgent(input: $input) { id status } }';
const COMPACT = 'mutation($input: CompactSessionInput!) { compactSession(input: $input) { id } }';
const HIDE = 'mutation($input: HideMessagesInput!) { hideMessages(input: $input) { __typename } }';
const FORK = 'mutation($input: ForkSessionInput!) { forkSession(input: $input) { session { id } } }';
const ASSEMBLE = `mutation($input: AssembleContextInput!) { assembleContext(input: $input) { contextHash tokenCount } }`;
const SESSION = `query($id: ID!) { session(id: $id) { id kind parent { id } } }`;

type Id = { id: string };
const create = async (input: Record<string, unknown>, as = alpha) =>
  (await gqlOk<{ createSession: Id }, unknown>(app, CREATE, { input }, as)).createSession.id;
const append = async (sessionId: string, messages: unknown[], extra: Record<string, unknown> = {}) =>
  (await gqlOk<{ appendMessages: { messages: Id[] } }, unknown>(app, APPEND, { input: { sessionId, messages, ...extra } }, alpha))
    .appendMessages.messages;

/** The root, its fork and a sub-agent session in the root's turn. */
async function buildTree(): Promise<{ root: string; fork: string; sub: string }> {
  const root = await create({ title: 'export me', settings: { model: 'gpt-4o' }, metadata: { team: 'a' } });
  const turn = (await gqlOk<{ startTurn: Id }, unknown>(app, START, { input: { sessionId: root, agentIds: ['main', 'helper'] } }, alpha))
    .startTurn.id;
  await append(
    root,
    [
      { role: 'SYSTEM', text: 'Be brief.' },
      { role: 'USER', text: 'What is in this picture?' },
      {
        role: 'ASSISTANT',
        parts: [{ reasoning: { text: 'look at it' } }, { toolCall: { callId: 'call_1', name: 'look', arguments: { zoom: 2 } } }],
      },
      { role: 'TOOL', parts: [{ toolResult: { callId: 'call_1', content: 'a red square' } }] },
      {
        role: 'USER',
        parts: [
          { text: { text: 'And this one?' } },
          { attachment: { name: 'p.png', mimeType: 'image/png', data: makePng(64, 32).toString('base64') } },
        ],
      },
      { role: 'ASSISTANT', text: 'A square again.' },
    ],
    { turnId: turn },
  );
  const sub = await create({ title: 'helper run', parentTurnId: turn, agentId: 'helper', messages: [{ role: 'USER', text: 'help' }] });
  await append(sub, [{ role: 'ASSISTANT', text: 'helped' }]);
  await gqlOk(
    app,
    USAGE,
    { input: { turnId: turn, agentId: 'main', callId: 'c1', inputTokens: 120, outputTokens: 30, cost: 0.01 } },
    alpha,
  );
  await gqlOk(
    app,
    USAGE,
    { input: { turnId: turn, agentId: 'helper', callId: 'c2', inputTokens: 50, outputTokens: 5, model: 'gpt-4o' } },
    alpha,
  );
  await gqlOk(app, COMPLETE, { input: { turnId: turn, agentId: 'helper', success: true } }, alpha);
  await gqlOk(app, COMPLETE, { input: { turnId: turn, agentId: 'main', success: true } }, alpha);
  const more = await append(root, [
    { role: 'USER', text: 'Summarise.' },
    { role: 'ASSISTANT', text: 'Two squares.' },
    { role: 'USER', text: 'Thanks' },
  ]);
  await gqlOk(
    app,
    COMPACT,
    { input: { sessionId: root, uptoIndex: 4, summary: 'They looked at a red square.', extractedContext: { shapes: 1 } } },
    alpha,
  );
  await gqlOk(app, HIDE, { input: { sessionId: root, messageIds: [more[1].id], reason: 'noise' } }, alpha);
  const fork = (await gqlOk<{ forkSession: { session: Id } }, unknown>(app, FORK, { input: { sessionId: root, messageIndex: 6 } }, alpha))
    .forkSession.session.id;
  await append(fork, [
    { role: 'USER', text: 'Summarise differently.' },
    { role: 'ASSISTANT', text: 'Squares, twice.' },
  ]);
  await gqlOk(app, COMPACT, { input: { sessionId: fork, uptoIndex: 7, summary: 'Squares.' } }, alpha);
  return { root, fork, sub };
}

type Line = Record<string, unknown>;
const ID_KEYS = new Set([
  'id',
  'sessionId',
  'turnId',
  'messageId',
  'parentId',
  'rootId',
  'forkPointMessageId',
  'parentTurnId',
  'activeTurnId',
  'attachmentId',
]);

/** The export with every id replaced by its order of first appearance, and the header's time dropped. */
function canonical(text: string): Line[] {
  const names = new Map<string, string>();
  const name = (id: unknown) => {
    if (typeof id !== 'string') return id;
    if (!names.has(id)) names.set(id, `#${names.size}`);
    return names.get(id);
  };
  const walk = (value: unknown, key = ''): unknown => {
    if (Array.isArray(value)) return value.map((v) => (key === 'ancestorIds' ? name(v) : walk(v)));
    if (value && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, ID_KEYS.has(k) ? name(v) : walk(v, k)]));
    }
    return value;
  };
  return text
    .trim()
    .split('\n')
    .map((line) => {
      const parsed = JSON.parse(line) as Line;
      if (parsed.type === 'header') delete parsed.exportedAt;
      if (parsed.type === 'turn') delete parsed.context;
      return walk(parsed) as Line;
    });
}

const hashOf = async (sessionId: string, as: { apiKey: string }, format: string) =>
  (
    await gqlOk<{ assembleContext: { contextHash: string; tokenCount: number } }, unknown>(
      app,
      ASSEMBLE,
      { input: { sessionId, format } },
      as,
    )
  ).assembleContext;

describe(`export and import (${backend.label})`, () => {
  let tree: { root: string; fork: string; sub: string };
  let first: string;
  let imported: { id: string; sourceId: string }[];

  it('exports a tree as versioned JSON Lines: a header, each session with its rows, an end line', async () => {
    tree = await buildTree();
    const out = await exportText(tree.root);
    expect(out.status).toBe(200);
    expect(out.type).toBe('application/x-ndjson');
    first = out.text;
    const lines = first
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Line);
    expect(lines[0]).toMatchObject({
      type: 'header',
      format: 'session-graph/export',
      version: 1,
      sessionId: rawIdOf(tree.root),
      tree: true,
    });
    expect(lines.at(-1)).toEqual({ type: 'end', sessions: 3, messages: 6 + 3 + 2 + 2 });
    const sessions = lines.filter((l) => l.type === 'session');
    expect(sessions.map((s) => s.kind)).toEqual(['ROOT', 'SUB_AGENT', 'FORK']);
    const counts = (type: string) => lines.filter((l) => l.type === type).length;
    expect({
      turns: counts('turn'),
      usage: counts('usage'),
      attachments: counts('attachment'),
      compactions: counts('compaction'),
      transforms: counts('transform'),
    }).toEqual({ turns: 1, usage: 2, attachments: 1, compactions: 2, transforms: 1 });
    const attachment = lines.find((l) => l.type === 'attachment')!;
    expect(Buffer.from(attachment.data as string, 'base64').equals(makePng(64, 32))).toBe(true);
    // Each line carries exactly the fields docs/export.schema.json requires of its type.
    const schema = JSON.parse(readFileSync(new URL('../../docs/export.schema.json', import.meta.url), 'utf8')) as {
      $defs: Record<string, { required?: string[]; allOf?: { required?: string[]; $ref?: string }[] }>;
    };
    const required = (name: string): string[] => {
      const def = schema.$defs[name];
      return [
        ...(def.required ?? []),
        ...(def.allOf ?? []).flatMap((d) => (d.$ref ? required(d.$ref.split('/').at(-1)!) : (d.required ?? []))),
      ];
    };
    for (const line of lines) expect(Object.keys(line).sort()).toEqual(required(line.type as string).sort());
    const tool = lines.find((l) => l.type === 'message' && l.role === 'ASSISTANT' && (l.toolCallIds as string[]).length)!;
    expect(tool.parts).toEqual([
      expect.objectContaining({ type: 'reasoning', text: 'look at it' }),
      expect.objectContaining({ type: 'toolCall', callId: 'call_1', name: 'look' }),
    ]);
  });

  it('imports into another workspace under new ids and exports again equal but for ids, with the same contextHash', async () => {
    const result = await importText(first);
    expect(result.status).toBe(200);
    imported = (result.body as { sessions: { id: string; sourceId: string }[] }).sessions;
    expect(imported.map((s) => s.sourceId)).toEqual([tree.root, tree.sub, tree.fork].map(rawIdOf));
    expect(
      imported.every((s, i) => rawIdOf(s.id) !== s.sourceId && rawIdOf(s.id) !== [tree.root, tree.sub, tree.fork].map(rawIdOf)[i]),
    ).toBe(true);
    const again = await exportText(imported[0].id, API_KEYS.beta);
    expect(again.status).toBe(200);
    expect(canonical(again.text)).toEqual(canonical(first));
    const pairs = [
      [tree.root, imported[0].id],
      [tree.sub, imported[1].id],
      [tree.fork, imported[2].id],
    ];
    for (const [original, copy] of pairs) {
      for (const format of ['ANTHROPIC_MESSAGES', 'OPENAI_CHAT']) {
        const [a, b] = [await hashOf(copy, beta, format), await hashOf(original, alpha, format)];
        expect(a).toEqual(b);
      }
    }
    // Not in the exporting workspace, and not in the importing one under the old ids.
    expect((await exportText(imported[0].id, API_KEYS.alpha)).status).toBe(404);
    expect((await exportText(tree.root, API_KEYS.beta)).status).toBe(404);
  });

  it('exports a fork alone with its ancestors, and without the tree only the session asked for', async () => {
    const fork = (await exportText(tree.fork, API_KEYS.alpha, false)).text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Line);
    expect(fork.filter((l) => l.type === 'session').map((s) => s.kind)).toEqual(['ROOT', 'FORK']);
    const sub = (await exportText(tree.sub, API_KEYS.alpha, false)).text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Line);
    // Without its parent's turn, a sub-agent session comes out as a root of its own.
    expect(sub.filter((l) => l.type === 'session')).toEqual([expect.objectContaining({ kind: 'ROOT', parentTurnId: null })]);
    expect((await importText(sub.map((l) => JSON.stringify(l)).join('\n'))).status).toBe(200);
  });

  it('refuses a broken line with its number and stores nothing of the file', async () => {
    const before = await gqlOk<{ sessions: { totalCount: number } }, unknown>(app, '{ sessions { totalCount } }', {}, beta);
    const lines = first.trim().split('\n');
    const broken = [...lines];
    broken[7] = '{"type":"message",';
    const refused = await importText(broken.join('\n'));
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ line: 8, message: expect.stringContaining('JSON') });
    // A reference to a message position that is not there, found after several sessions were read.
    const wrong = lines.map((l) => JSON.parse(l) as Line);
    const last = wrong.findLastIndex((l) => l.type === 'message');
    wrong[last] = { ...wrong[last], position: 99 };
    const second = await importText(wrong.map((l) => JSON.stringify(l)).join('\n'));
    expect(second).toMatchObject({ status: 400, body: { line: last + 1, message: expect.stringContaining('position 99') } });
    // A part the server would never write, and bytes that are not those the line's SHA-256 names.
    const edited = (index: number, change: Line) =>
      lines.map((l, i) => (i === index ? JSON.stringify({ ...(JSON.parse(l) as Line), ...change }) : l)).join('\n');
    const firstMessage = wrong.findIndex((l) => l.type === 'message');
    expect(await importText(edited(firstMessage, { parts: [{ type: 'text' }] }))).toMatchObject({
      status: 400,
      body: { line: firstMessage + 1, message: expect.stringContaining('parts[0]') },
    });
    const image = wrong.findIndex((l) => l.type === 'attachment');
    expect(await importText(edited(image, { data: makePng(64, 33).toString('base64') }))).toMatchObject({
      status: 400,
      body: { line: image + 1, message: expect.stringContaining('sha256') },
    });
    // A fork whose lineage claims more of its parent than the cut.
    const fork = wrong.findIndex((l) => l.type === 'session' && l.kind === 'FORK');
    const lineage = (wrong[fork].lineage as Line[]).map((e) => ({ ...e, end: 8 }));
    expect(await importText(edited(fork, { lineage }))).toMatchObject({
      status: 400,
      body: { line: fork + 1, message: expect.stringContaining('lineage') },
    });
    const cut = await importText(lines.slice(0, -1).join('\n'));
    expect(cut).toMatchObject({ status: 400, body: { line: lines.length - 1, message: expect.stringContaining('cut short') } });
    const after = await gqlOk<{ sessions: { totalCount: number } }, unknown>(app, '{ sessions { totalCount } }', {}, beta);
    expect(after.sessions.totalCount).toBe(before.sessions.totalCount);
  });

  it('imports a body larger than what is kept in memory (it goes through a temporary file) in one piece', async () => {
    const id = '0196f5c2-9000-7000-8000-0000000000aa';
    const at = '2026-11-01T09:00:00.000Z';
    const count = 3000;
    const text = 'x'.repeat(500);
    const lines = [
      JSON.stringify({ type: 'header', format: 'session-graph/export', version: 1, exportedAt: at, sessionId: id, tree: false }),
      JSON.stringify({
        ...{ type: 'session', id, kind: 'ROOT', title: 'long', settings: {}, metadata: {}, parentId: null, rootId: id, ancestorIds: [] },
        ...{
          depth: 0,
          forkIndex: null,
          forkPointMessageId: null,
          lineage: [],
          parentTurnId: null,
          parentMessageCount: null,
          agentId: null,
        },
        ...{ messageCount: count, compactionCount: 0, transformCount: 0, turnCount: 0, activeTurnId: null, createdAt: at, updatedAt: at },
      }),
      ...Array.from({ length: count }, (_, position) =>
        JSON.stringify({
          ...{ type: 'message', id: `m${position}`, sessionId: id, position, role: position % 2 ? 'ASSISTANT' : 'USER' },
          ...{ parts: [{ type: 'text', text: `${position} ${text}` }], toolCallIds: [], toolResultIds: [], generating: false },
          ...{ tokensO200k: null, tokensCl100k: null, turnId: null, agentId: null, createdAt: at, updatedAt: at },
        }),
      ),
      JSON.stringify({ type: 'end', sessions: 1, messages: count }),
    ];
    const body = lines.join('\n');
    expect(body.length).toBeGreaterThan(1024 * 1024);
    const out = await importText(body);
    expect(out.status).toBe(200);
    const [{ id: imported }] = (out.body as { sessions: { id: string }[] }).sessions;
    const read = await gqlOk<{ session: { messageCount: number; messages: { edges: { node: { text: string } }[] } } }, unknown>(
      app,
      'query($id: ID!) { session(id: $id) { messageCount messages(last: 1) { edges { node { text } } } } }',
      { id: imported },
      beta,
    );
    expect(read.session.messageCount).toBe(count);
    expect(read.session.messages.edges[0].node.text).toBe(`${count - 1} ${text}`);
  });

  it('importSessions takes the same lines over GraphQL and refuses a bad one with extensions.line', async () => {
    const IMPORT = 'mutation($input: ImportSessionsInput!) { importSessions(input: $input) { sessions { id title kind messageCount } } }';
    const out = await gqlOk<{ importSessions: { sessions: { id: string; title: string; kind: string; messageCount: number }[] } }, unknown>(
      app,
      IMPORT,
      { input: { lines: first } },
      beta,
    );
    expect(out.importSessions.sessions.map((s) => [s.title, s.kind, s.messageCount])).toEqual([
      ['export me', 'ROOT', 9],
      ['helper run', 'SUB_AGENT', 2],
      ['export me (fork 1)', 'FORK', 8],
    ]);
    const error = await gqlError(app, IMPORT, { input: { lines: '{"type":"header"}\n' } }, beta);
    expect(error.code).toBe('BAD_USER_INPUT');
    expect(error.errors[0].extensions?.line).toBe(1);
  });

  it('keeps the key rules: no key 401, a read-only key may export but not import, another method 405', async () => {
    const noKey = await fetch(`${origin()}/export/sessions/${tree.root}`);
    expect(noKey.status).toBe(401);
    const wrongMethod = await fetch(`${origin()}/import`, { headers: auth(API_KEYS.beta) });
    expect(wrongMethod.status).toBe(405);
    expect((await exportText(tree.root, READ_ONLY)).status).toBe(200);
    expect(await importText(first, READ_ONLY)).toMatchObject({ status: 403, body: { errors: [{ extensions: { code: 'FORBIDDEN' } }] } });
    const nodes = [];
    for (const { id } of imported) {
      nodes.push((await gqlOk<{ session: { kind: string; parent: { id: string } | null } }, unknown>(app, SESSION, { id }, beta)).session);
    }
    expect(nodes.map((n) => [n.kind, n.parent?.id ?? null])).toEqual([
      ['ROOT', null],
      ['SUB_AGENT', null],
      ['FORK', imported[0].id],
    ]);
  });
});
