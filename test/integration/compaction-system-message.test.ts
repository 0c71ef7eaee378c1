/**
 * The session's leading system message survives a compaction that covers it (issue 12, item 5):
 * kept ahead of the summary, in the session and in forks that inherit the compaction, whether the
 * whole history or only a budget's window is loaded.
 */
import { describe, expect, it } from 'vitest';
import { gqlOk, type TestApp, useTestApp } from '../helpers/app.js';

let app: TestApp;
useTestApp((built) => {
  app = built;
});

const CREATE = `mutation($input: CreateSessionInput!) { createSession(input: $input) { id messages(first: 20) { edges { node { id } } } } }`;
const COMPACT = `mutation($input: CompactSessionInput!) { compactSession(input: $input) { id } }`;
const FORK = `mutation($input: ForkSessionInput!) { forkSession(input: $input) { session { id } } }`;
const ASSEMBLE = `mutation($input: AssembleContextInput!) { assembleContext(input: $input) {
  tokenCount hasCompression droppedMessageCount payload
  messages { kind sourceIndex sourceMessageId tokenCount }
  decisions { messageId index decision reason } } }`;

interface Context {
  tokenCount: number;
  hasCompression: boolean;
  droppedMessageCount: number;
  payload: { system?: string; messages: unknown[] };
  messages: { kind: string; sourceIndex: number | null; sourceMessageId: string | null; tokenCount: number }[];
  decisions: { messageId: string; index: number; decision: string; reason: string }[];
}
const assemble = async (input: Record<string, unknown>) =>
  (await gqlOk<{ assembleContext: Context }, unknown>(app, ASSEMBLE, { input })).assembleContext;

describe('the leading system message before a compaction point', () => {
  it('is kept ahead of the summary in the session and in a fork inheriting the compaction, windowed or not', async () => {
    const filler = 'A longer message so that a budget leaves some of them out. '.repeat(4);
    const texts = ['Answer in French.', 'q1', `a1 ${filler}`, 'q2', `a2 ${filler}`, 'q3', `a3 ${filler}`, 'q4', `a4 ${filler}`, 'q5'];
    const roles = ['SYSTEM', 'USER', 'ASSISTANT', 'USER', 'ASSISTANT', 'USER', 'ASSISTANT', 'USER', 'ASSISTANT', 'USER'];
    const { createSession } = await gqlOk<{ createSession: { id: string; messages: { edges: { node: { id: string } }[] } } }, unknown>(
      app,
      CREATE,
      { input: { messages: texts.map((text, i) => ({ role: roles[i], text })) } },
    );
    const root = createSession.id;
    const systemId = createSession.messages.edges[0].node.id;
    await gqlOk(app, COMPACT, { input: { sessionId: root, uptoIndex: 3, summary: 'The user asked about Paris.' } });
    const fork = (
      await gqlOk<{ forkSession: { session: { id: string } } }, unknown>(app, FORK, { input: { sessionId: root, messageIndex: 9 } })
    ).forkSession.session.id;

    for (const sessionId of [root, fork]) {
      const whole = await assemble({ sessionId, format: 'OPENAI_CHAT' });
      expect(whole.hasCompression).toBe(true);
      expect(whole.messages.map((m) => [m.kind, m.sourceIndex])).toEqual([
        ['MESSAGE', 0],
        ['SUMMARY', null],
        ...[3, 4, 5, 6, 7, 8, ...(sessionId === root ? [9] : [])].map((i) => ['MESSAGE', i]),
      ]);
      const decision = whole.decisions.find((d) => d.messageId === systemId)!;
      expect(decision).toMatchObject({ index: 0, decision: 'KEPT' });
      expect(decision.reason).toContain('kept rather than summarized by the compaction of messages [0, 3)');
      expect(whole.decisions.filter((d) => d.decision === 'SUMMARIZED').map((d) => d.index)).toEqual([1, 2]);
      expect((whole.payload.messages[0] as { role: string; content: string }).content).toBe('Answer in French.');

      // A budget: only a window of the newest messages is loaded; the system message is loaded apart.
      const newestUser = whole.messages.find((m) => m.sourceIndex === (sessionId === root ? 9 : 7))!;
      const budget = whole.messages[0].tokenCount + whole.messages[1].tokenCount + newestUser.tokenCount + 3;
      const tight = await assemble({ sessionId, format: 'OPENAI_CHAT', maxTokens: budget });
      expect(tight.messages.map((m) => [m.kind, m.sourceIndex])).toEqual([
        ['MESSAGE', 0],
        ['SUMMARY', null],
        ['MESSAGE', newestUser.sourceIndex],
      ]);
      expect(tight.tokenCount).toBe(budget);
      expect(tight.decisions.map((d) => [d.index, d.decision])).toEqual(
        whole.decisions.map((d) =>
          d.index === 0 || d.index === newestUser.sourceIndex
            ? [d.index, 'KEPT']
            : [d.index, d.index < 3 ? 'SUMMARIZED' : 'DROPPED_BUDGET'],
        ),
      );
      expect(tight.droppedMessageCount).toBe(tight.decisions.filter((d) => d.decision === 'DROPPED_BUDGET').length);

      // keepSystemMessage: false summarizes it with the rest.
      const off = await assemble({ sessionId, keepSystemMessage: false });
      expect(off.messages[0].kind).toBe('SUMMARY');
      expect(off.decisions.find((d) => d.messageId === systemId)?.decision).toBe('SUMMARIZED');
    }
  });
});
