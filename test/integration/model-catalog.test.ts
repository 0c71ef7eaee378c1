import { describe, expect, it } from 'vitest';
import { graphql } from '../generated/index.js';
import { gqlError, gqlOk, type TestApp, useTestApp } from '../helpers/app.js';
import { makePdf, makePng } from '../helpers/images.js';

// Issue 47 over HTTP: the model catalog's default budget and estimated cost, usage priced from the
// catalog with its costSource through every sum, and the context gauge against an unbudgeted assembly.

const CreateSession = graphql(`
  mutation CatalogCreateSession($input: CreateSessionInput!) {
    createSession(input: $input) {
      id
    }
  }
`);

const Append = graphql(`
  mutation CatalogAppend($input: AppendMessagesInput!) {
    appendMessages(input: $input) {
      messages {
        id
        index
      }
    }
  }
`);

const Assemble = graphql(`
  mutation CatalogAssemble($input: AssembleContextInput!) {
    assembleContext(input: $input) {
      tokenCount
      maxTokens
      estimatedCost {
        model
        inputCost
        cachedInputCost
        total
        currency
      }
    }
  }
`);

const Gauge = graphql(`
  query CatalogGauge($id: ID!, $model: String, $maxTokens: Int, $encoding: TokenEncoding, $format: ContextFormat) {
    node(id: $id) {
      ... on Session {
        contextGauge(model: $model, maxTokens: $maxTokens, encoding: $encoding, format: $format) {
          usedTokens
          maxTokens
          messageCount
          messagesUntilDrop
          byRole {
            system
            summary
            user
            assistant
            tool
            attachments
          }
        }
      }
    }
  }
`);

const Finish = graphql(`
  mutation CatalogFinish($input: UpdateMessageInput!) {
    updateMessage(input: $input) {
      id
    }
  }
`);

const Compact = graphql(`
  mutation CatalogCompact($input: CompactSessionInput!) {
    compactSession(input: $input) {
      id
    }
  }
`);

const Hide = graphql(`
  mutation CatalogHide($input: HideMessagesInput!) {
    hideMessages(input: $input) {
      __typename
    }
  }
`);

const Redact = graphql(`
  mutation CatalogRedact($input: RedactMessageInput!) {
    redactMessage(input: $input) {
      __typename
    }
  }
`);

const Fork = graphql(`
  mutation CatalogFork($input: ForkSessionInput!) {
    forkSession(input: $input) {
      session {
        id
      }
    }
  }
`);

const Start = graphql(`
  mutation CatalogStartTurn($input: StartTurnInput!) {
    startTurn(input: $input) {
      id
    }
  }
`);

const Report = graphql(`
  mutation CatalogReportUsage($input: ReportUsageInput!) {
    reportUsage(input: $input) {
      id
    }
  }
`);

const UsageRead = graphql(`
  query CatalogUsage($session: ID!, $turn: ID!) {
    session: node(id: $session) {
      ... on Session {
        usage {
          cost
          costSource
        }
        ownUsage {
          costSource
        }
        treeUsage {
          cost
          costSource
        }
        usageByModel {
          model
          usage {
            cost
            costSource
          }
        }
      }
    }
    turn: node(id: $turn) {
      ... on Turn {
        usage {
          cost
          costSource
        }
        ownUsage {
          cost
          costSource
        }
        agents {
          agentId
          usage {
            cost
            costSource
          }
        }
      }
    }
  }
`);

const Catalog = graphql(`
  query CatalogSearch($search: String!) {
    modelCatalog(search: $search) {
      name
      contextWindow
      defaultMaxTokens
      prices {
        input
        output
        cacheRead
        cacheWrite
      }
    }
  }
`);

let app: TestApp;
useTestApp((built) => {
  app = built;
});

const words = (n: number, seed: string) => Array.from({ length: n }, (_, i) => `${seed}${i}`).join(' ');

async function conversation(turns: number) {
  const { createSession } = await gqlOk(app, CreateSession, {
    input: { title: 'catalog', messages: [{ role: 'SYSTEM', text: 'You are terse.' }] },
  });
  const messages = [];
  for (let t = 0; t < turns; t++) {
    messages.push({ role: 'USER' as const, text: `Question ${t}: ${words(20, 'q')}` });
    messages.push({ role: 'ASSISTANT' as const, text: `Answer ${t}: ${words(40, 'a')}` });
  }
  const { appendMessages } = await gqlOk(app, Append, { input: { sessionId: createSession.id, messages } });
  return { id: createSession.id, messageIds: appendMessages.messages.map((m) => m.id) };
}

describe('the model catalog in context assembly', () => {
  it('gives a known model its window less the output reserve and prices the input', async () => {
    const { id } = await conversation(3);
    const { assembleContext: plain } = await gqlOk(app, Assemble, { input: { sessionId: id } });
    expect(plain.maxTokens).toBeNull();
    expect(plain.estimatedCost).toBeNull();

    const { assembleContext: priced } = await gqlOk(app, Assemble, {
      input: { sessionId: id, model: 'claude-sonnet-4-5', format: 'ANTHROPIC_MESSAGES' },
    });
    // 200,000-token window less the 16,384-token reserve.
    expect(priced.maxTokens).toBe(183_616);
    const cost = priced.estimatedCost!;
    expect(cost.model).toBe('anthropic/claude-sonnet-4-5');
    expect(cost.currency).toBe('USD');
    expect(cost.total).toBeGreaterThan(0);
    // Nothing reused yet: every token at the input rate, $3 per million.
    expect(cost.inputCost).toBeCloseTo((priced.tokenCount * 3) / 1e6, 12);
    expect(cost.total).toBeCloseTo(cost.inputCost + cost.cachedInputCost, 12);

    const { assembleContext: dated } = await gqlOk(app, Assemble, {
      input: { sessionId: id, model: 'anthropic/claude-sonnet-4-5-20250929', outputReserve: 50_000 },
    });
    expect(dated.maxTokens).toBe(150_000);
    const { assembleContext: given } = await gqlOk(app, Assemble, { input: { sessionId: id, model: 'gpt-4o', maxTokens: 500 } });
    expect(given.maxTokens).toBe(500);
    expect(given.estimatedCost!.model).toBe('openai/gpt-4o');
  });

  it('refuses an unknown model with BAD_USER_INPUT naming close matches and where to find names', async () => {
    const { id } = await conversation(1);
    const error = await gqlError(app, Assemble, { input: { sessionId: id, model: 'claude-sonet-4-5' } });
    expect(error.code).toBe('BAD_USER_INPUT');
    expect(error.message).toContain('"claude-sonet-4-5"');
    expect(error.message).toContain('anthropic/claude-sonnet-4-5');
    expect(error.message).toContain('modelCatalog(search:)');
    const gauge = await gqlError(app, Gauge, { id, model: 'gpt-9' });
    expect(gauge.code).toBe('BAD_USER_INPUT');

    const { modelCatalog } = await gqlOk(app, Catalog, { search: 'sonnet 4-5' });
    const sonnet = modelCatalog.find((m) => m.name === 'anthropic/claude-sonnet-4-5')!;
    expect(sonnet.contextWindow).toBe(200_000);
    expect(sonnet.defaultMaxTokens).toBe(183_616);
    expect(sonnet.prices).toEqual({ input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 });
  });
});

describe('usage priced from the catalog', () => {
  it('prices a report with a model and no cost (CATALOG), and every sum says its weakest source', async () => {
    const { id } = await conversation(1);
    const { startTurn } = await gqlOk(app, Start, { input: { sessionId: id, agentIds: ['a', 'b'] } });
    const turnId = startTurn.id;
    const read = () => gqlOk(app, UsageRead, { session: id, turn: turnId });

    let usage = await read();
    expect(usage.turn).toMatchObject({ usage: { cost: 0, costSource: 'REPORTED' } });

    await gqlOk(app, Report, {
      input: {
        turnId,
        agentId: 'a',
        model: 'claude-sonnet-4-5',
        inputTokens: 1000,
        outputTokens: 500,
        cacheReadTokens: 2000,
        cacheWriteTokens: 400,
      },
    });
    // $3 input, $15 output, $0.30 cache read, $3.75 cache write, per million tokens.
    const priced = (1000 * 3 + 500 * 15 + 2000 * 0.3 + 400 * 3.75) / 1e6;
    await gqlOk(app, Report, { input: { turnId, agentId: 'b', model: 'claude-sonnet-4-5', inputTokens: 10, cost: 0.5 } });
    usage = await read();
    const turn = usage.turn as Extract<typeof usage.turn, { agents: unknown }>;
    expect(turn.agents.find((a) => a.agentId === 'a')!.usage.costSource).toBe('CATALOG');
    expect(turn.agents.find((a) => a.agentId === 'a')!.usage.cost).toBeCloseTo(priced, 12);
    expect(turn.agents.find((a) => a.agentId === 'b')!.usage).toEqual({ cost: 0.5, costSource: 'REPORTED' });
    expect(turn.ownUsage.costSource).toBe('CATALOG');
    expect(turn.usage.cost).toBeCloseTo(priced + 0.5, 12);
    expect(turn.usage.costSource).toBe('CATALOG');
    const session = usage.session as Extract<typeof usage.session, { usageByModel: unknown }>;
    expect(session.usage.costSource).toBe('CATALOG');
    expect(session.treeUsage).toEqual(session.usage);
    expect(session.usageByModel).toEqual([{ model: 'claude-sonnet-4-5', usage: { cost: session.usage.cost, costSource: 'CATALOG' } }]);

    // No cost and no model the catalog knows: 0, UNKNOWN, and the sums say so.
    await gqlOk(app, Report, { input: { turnId, agentId: 'b', model: 'my-own-model', inputTokens: 10 } });
    usage = await read();
    const after = usage.turn as typeof turn;
    expect(after.agents.find((a) => a.agentId === 'b')!.usage).toEqual({ cost: 0.5, costSource: 'UNKNOWN' });
    expect(after.agents.find((a) => a.agentId === 'a')!.usage.costSource).toBe('CATALOG');
    expect(after.usage.costSource).toBe('UNKNOWN');
    expect((usage.session as typeof session).usage.costSource).toBe('UNKNOWN');
  });

  it("rolls a sub-agent session's catalog-priced usage up into its parent turn", async () => {
    const { id } = await conversation(1);
    const { startTurn } = await gqlOk(app, Start, { input: { sessionId: id, agentIds: ['lead'] } });
    await gqlOk(app, Report, { input: { turnId: startTurn.id, agentId: 'lead', inputTokens: 5, cost: 0.25 } });
    const { createSession: sub } = await gqlOk(app, CreateSession, {
      input: { title: 'sub', parentTurnId: startTurn.id, agentId: 'lead', messages: [{ role: 'USER', text: 'go' }] },
    });
    const { startTurn: subTurn } = await gqlOk(app, Start, { input: { sessionId: sub.id, agentIds: ['worker'] } });
    await gqlOk(app, Report, { input: { turnId: subTurn.id, agentId: 'worker', model: 'gpt-4o', inputTokens: 1_000_000 } });
    const usage = await gqlOk(app, UsageRead, { session: id, turn: startTurn.id });
    const turn = usage.turn as Extract<typeof usage.turn, { agents: unknown }>;
    expect(turn.ownUsage).toEqual({ cost: 0.25, costSource: 'REPORTED' });
    // gpt-4o: $2.50 per million input tokens.
    expect(turn.usage.cost).toBeCloseTo(2.75, 12);
    expect(turn.usage.costSource).toBe('CATALOG');
  });
});

describe('the context gauge', () => {
  const formats = ['GENERIC', 'OPENAI_CHAT', 'OPENAI_RESPONSES', 'ANTHROPIC_MESSAGES', 'GEMINI'] as const;

  it("equals an unbudgeted assembly's tokenCount in every format and encoding, with a compaction, transforms, a tool round and a fork", async () => {
    const { id, messageIds } = await conversation(6);
    await gqlOk(app, Compact, { input: { sessionId: id, uptoIndex: 5, summary: 'They asked two questions; both were answered.' } });
    await gqlOk(app, Hide, { input: { sessionId: id, messageIds: [messageIds[7]], reason: 'off topic' } });
    await gqlOk(app, Redact, { input: { messageId: messageIds[9], replacement: 'an answer we do not keep' } });
    await gqlOk(app, Append, {
      input: {
        sessionId: id,
        messages: [
          { role: 'USER', text: 'Look it up.' },
          {
            role: 'ASSISTANT',
            parts: [{ text: { text: 'Searching.' } }, { toolCall: { callId: 'c1', name: 'search', arguments: { q: 'x' } } }],
          },
          { role: 'TOOL', parts: [{ toolResult: { callId: 'c1', content: words(30, 'r') } }] },
          { role: 'ASSISTANT', text: 'Found it.' },
          { role: 'USER', text: 'Thanks.' },
        ],
      },
    });
    const { forkSession } = await gqlOk(app, Fork, { input: { sessionId: id, messageIndex: 17 } });
    await gqlOk(app, Append, { input: { sessionId: forkSession.session.id, messages: [{ role: 'USER', text: 'And in the fork?' }] } });
    for (const [sessionId, encoding, format] of [
      ...(['O200K_BASE', 'CL100K_BASE'] as const).flatMap((e) => formats.map((f) => [id, e, f] as const)),
      ...formats.map((f) => [forkSession.session.id, 'O200K_BASE', f] as const),
    ]) {
      {
        const { assembleContext } = await gqlOk(app, Assemble, { input: { sessionId, encoding, format } });
        const { node } = await gqlOk(app, Gauge, { id: sessionId, encoding, format });
        const gauge = (node as { contextGauge: { usedTokens: number; byRole: Record<string, number> } }).contextGauge;
        expect({ sessionId, encoding, format, used: gauge.usedTokens }).toEqual({
          sessionId,
          encoding,
          format,
          used: assembleContext.tokenCount,
        });
        const priming = format === 'GEMINI' ? 0 : 3;
        const { __typename: _, ...roles } = gauge.byRole as Record<string, number>;
        expect(Object.values(roles).reduce((a, b) => a + b, 0) + priming).toBe(gauge.usedTokens);
        expect(gauge.byRole.summary).toBeGreaterThan(0);
      }
    }
  });

  it('counts images and PDFs by their provider rule, as assembly does', async () => {
    const { id } = await conversation(1);
    await gqlOk(app, Append, {
      input: {
        sessionId: id,
        messages: [
          {
            role: 'USER',
            parts: [
              { text: { text: 'What is in these?' } },
              { attachment: { name: 'chart.png', mimeType: 'image/png', data: makePng(1200, 800).toString('base64') } },
              { attachment: { name: 'report.pdf', mimeType: 'application/pdf', data: makePdf(3).toString('base64') } },
            ],
          },
        ],
      },
    });
    for (const format of ['OPENAI_CHAT', 'ANTHROPIC_MESSAGES', 'GEMINI'] as const) {
      const { assembleContext } = await gqlOk(app, Assemble, { input: { sessionId: id, format } });
      const { node } = await gqlOk(app, Gauge, { id, format });
      const gauge = (node as { contextGauge: { usedTokens: number; byRole: { attachments: number } } }).contextGauge;
      expect(gauge.byRole.attachments).toBeGreaterThan(0);
      expect({ format, used: gauge.usedTokens }).toEqual({ format, used: assembleContext.tokenCount });
    }
  });

  it('follows a polled session: a new message, a finished one, a hidden one and a compaction each move it, as assembly does', async () => {
    const { id, messageIds } = await conversation(3);
    const used = async () => {
      const [{ node }, { assembleContext }] = await Promise.all([
        gqlOk(app, Gauge, { id, format: 'ANTHROPIC_MESSAGES' }),
        gqlOk(app, Assemble, { input: { sessionId: id, format: 'ANTHROPIC_MESSAGES' } }),
      ]);
      const gauge = (node as { contextGauge: { usedTokens: number } }).contextGauge.usedTokens;
      expect(gauge).toBe(assembleContext.tokenCount);
      return gauge;
    };
    const first = await used();
    expect(await used()).toBe(first);
    // A generating message is not counted; finishing it (the same message count) is.
    const { appendMessages } = await gqlOk(app, Append, {
      input: { sessionId: id, messages: [{ role: 'ASSISTANT', text: 'Thinking…', generating: true }] },
    });
    expect(await used()).toBe(first);
    await gqlOk(app, Finish, { input: { messageId: appendMessages.messages[0].id, appendText: ' done, here it is.', generating: false } });
    const finished = await used();
    expect(finished).toBeGreaterThan(first);
    await gqlOk(app, Hide, { input: { sessionId: id, messageIds: [messageIds[2]], reason: 'off topic' } });
    const hidden = await used();
    expect(hidden).toBeLessThan(finished);
    await gqlOk(app, Compact, { input: { sessionId: id, uptoIndex: 4, summary: 'Two questions, answered.' } });
    expect(await used()).not.toBe(hidden);
  });

  it('counts down the messages until the budget drops one, and takes the budget from a model', async () => {
    const { id } = await conversation(4);
    const read = async (variables: { maxTokens?: number; model?: string }) => {
      const { node } = await gqlOk(app, Gauge, { id, format: 'OPENAI_CHAT', ...variables });
      return (
        node as { contextGauge: { usedTokens: number; maxTokens: number | null; messageCount: number; messagesUntilDrop: number | null } }
      ).contextGauge;
    };
    const open = await read({});
    expect(open.maxTokens).toBeNull();
    expect(open.messagesUntilDrop).toBeNull();
    expect(open.messageCount).toBe(9);
    expect((await read({ maxTokens: open.usedTokens })).messagesUntilDrop).toBe(0);
    expect((await read({ maxTokens: open.usedTokens - 1 })).messagesUntilDrop).toBe(0);
    const average = (open.usedTokens - 3) / open.messageCount;
    expect((await read({ maxTokens: open.usedTokens + Math.ceil(average * 10) })).messagesUntilDrop).toBe(10);
    const modelled = await read({ model: 'gpt-4o' });
    expect(modelled.maxTokens).toBe(128_000 - 16_384);
    expect(modelled.messagesUntilDrop).toBeGreaterThan(1000);
  });
});
