import { uuidv7 } from '../db/ids.js';
import { isRetryableSqlError, type Sql, type SqlClient } from '../db/sql.js';
import * as store from '../db/stores/turns.js';
import { recordUsage } from '../db/stores/usage-reports.js';
import {
  addUsage,
  checkTotals,
  MAX_TOTAL_TOKENS,
  decideCompletion,
  errorText,
  optionalKey,
  reportCost,
  requireActive,
  requireAgent,
  requiredKey,
  staleTurnError,
  usageJson,
  validateAgentIds,
  validateUsage,
  type UsageReportInput,
} from '../domain/turns.js';
import { DomainError, notFound } from '../domain/errors.js';
import { loadModelCatalog } from '../domain/model-catalog.js';
import type { Logger } from '../logger.js';
import type { EventBus, SessionEventMessage } from '../pubsub/bus.js';
import { publishAll, writeThenPublish } from './event-log.js';
import { appendEvents } from '../db/stores/events.js';

export type InitiatorKind = 'USER' | 'EXTENSION' | 'SYSTEM';

export interface TurnServiceOptions {
  /** An ACTIVE turn with no usage, message or heartbeat for this long is failed by the sweeper. */
  turnTimeoutMs: number;
  /** How often the sweeper looks for such turns. */
  sweepIntervalMs: number;
}

const SWEEP_BATCH = 100;

/**
 * The turn lifecycle, with its state in the database so any instance can serve any call. Every
 * write locks the turn's session row first (the same lock appends, forks and the event log take),
 * reads the turn through the store, decides with domain/turns.ts, writes, appends its events to the
 * session's log in the same transaction, and publishes them after the commit.
 */
export class TurnService {
  private sweepTimer: NodeJS.Timeout | null = null;
  private sweeping: Promise<unknown> | null = null;

  constructor(
    private readonly sql: Sql,
    private readonly bus: EventBus,
    private readonly logger: Logger,
    readonly options: TurnServiceOptions,
  ) {}

  private write<T>(work: (sql: SqlClient, events: SessionEventMessage[]) => Promise<T>): Promise<T> {
    return writeThenPublish(this.bus, (events) => this.sql.transaction((sql) => work(sql, events)), isRetryableSqlError);
  }

  /** Locks the turn's session and reads the turn; NOT_FOUND outside the workspace. */
  private async lockTurn(sql: SqlClient, workspaceId: string, turnId: string, clientId: string) {
    const session = await store.lockSessionOfTurn(sql, workspaceId, turnId);
    const turn = session && (await store.readTurn(sql, turnId));
    if (!session || !turn) throw notFound('Turn', clientId);
    return { session, turn };
  }

  async startTurn(
    workspaceId: string,
    input: {
      sessionId: string;
      agentIds: readonly string[];
      initiator?: { kind: InitiatorKind; id?: string | null } | null;
      clientTurnId?: string | null;
    },
    clientId = input.sessionId,
  ): Promise<store.TurnRow> {
    const agentIds = validateAgentIds(input.agentIds);
    const clientTurnId = optionalKey(input.clientTurnId, 'turnId');
    const initiatorId = optionalKey(input.initiator?.id, 'initiator.id');
    return this.write(async (sql, events) => {
      const session = await store.lockSession(sql, workspaceId, input.sessionId);
      if (!session) throw notFound('Session', clientId);
      if (clientTurnId) {
        const existing = await store.findByClientTurnId(sql, session.id, clientTurnId);
        if (existing) return existing;
      }
      if (session.activeTurnId) {
        throw new DomainError('TURN_ALREADY_ACTIVE', `Session ${clientId} already has an active turn; complete or cancel it first.`, {
          sessionId: clientId,
        });
      }
      const now = new Date();
      const turn = await store.insertTurn(sql, {
        id: uuidv7(),
        sessionId: session.id,
        number: session.turnCount + 1,
        clientTurnId,
        initiatorKind: input.initiator?.kind ?? 'USER',
        initiatorId,
        agentIds,
        now,
      });
      events.push(
        ...(await appendEvents(sql, session.id, [
          {
            type: 'TURN_STARTED',
            turnId: turn.id,
            payload: { number: turn.number, agentIds, initiator: { kind: turn.initiatorKind, id: initiatorId } },
          },
        ])),
      );
      return turn;
    });
  }

  /**
   * Adds one model call's usage to its agent and its turn. A repeated callId for the turn changes
   * nothing; a report after the turn ended still counts (and emits its event).
   */
  async reportUsage(
    workspaceId: string,
    input: UsageReportInput & { turnId: string; agentId: string; callId?: string | null; model?: string | null },
    clientId = input.turnId,
  ): Promise<store.TurnRow> {
    const usage = validateUsage(input);
    const agentId = requiredKey(input.agentId, 'agentId');
    const callId = optionalKey(input.callId, 'callId');
    const model = optionalKey(input.model, 'model');
    const sent = input.cost !== null && input.cost !== undefined;
    const catalog = !sent && model !== null ? await loadModelCatalog() : null;
    // One statement and no transaction on the way that matters (see recordUsage): holding no lock
    // across round trips is what keeps a burst of reports from many processes fast. When it
    // records nothing, the turn is read to say why, with the same rules as everywhere else.
    for (let attempt = 1; ; attempt++) {
      const now = new Date();
      const { cost, costSource } = reportCost(usage, sent, model, catalog, now);
      let recorded: Awaited<ReturnType<typeof recordUsage>>;
      try {
        recorded = await recordUsage(this.sql, {
          id: uuidv7(),
          eventId: uuidv7(),
          workspaceId,
          turnId: input.turnId,
          agentId,
          callId,
          model,
          usage: { ...usage, cost },
          costSource,
          maxTotal: MAX_TOTAL_TOKENS,
          now,
        });
      } catch (error) {
        if (attempt < 5 && isRetryableSqlError(error)) continue;
        // The turn's session was deleted while the statement ran.
        if ((error as { code?: string }).code === '23503') throw notFound('Turn', clientId);
        throw error;
      }
      if (!recorded) {
        const turn = await store.readTurnInWorkspace(this.sql, workspaceId, input.turnId);
        if (!turn) throw notFound('Turn', clientId);
        requireAgent(turn, agentId, clientId);
        checkTotals(addUsage(turn, usage), 'the turn');
        // A repeated callId: the report was recorded before.
        return turn;
      }
      publishAll(this.bus, [
        {
          id: recorded.event.id,
          sessionId: recorded.sessionId,
          sequence: recorded.event.sequence,
          type: 'TURN_USAGE_UPDATED',
          turnId: recorded.turn.id,
          messageId: null,
          payload: recorded.event.payload,
          createdAt: now.toISOString(),
        },
        ...recorded.wrappers,
      ]);
      return recorded.turn;
    }
  }

  /**
   * One agent is done. When it is the last one, the turn ends (COMPLETED, or FAILED when any agent
   * failed): the session's lock makes the last completion exactly one, whatever the concurrency.
   */
  async completeAgent(
    workspaceId: string,
    input: { turnId: string; agentId: string; success: boolean; error?: string | null },
    clientId = input.turnId,
  ): Promise<store.TurnRow> {
    const agentId = requiredKey(input.agentId, 'agentId');
    const error = errorText(input.error, 'error');
    return this.write(async (sql, events) => {
      const { session, turn } = await this.lockTurn(sql, workspaceId, input.turnId, clientId);
      const decision = decideCompletion(turn, { agentId, success: input.success, error }, clientId);
      if (decision.kind === 'unchanged') return turn;
      const now = new Date();
      await store.setAgentStatus(sql, turn.id, agentId, decision.agentStatus, error, now);
      const newEvents: Parameters<typeof appendEvents>[2] = [
        { type: 'TURN_AGENT_COMPLETED', turnId: turn.id, payload: { agentId, success: input.success, error } },
      ];
      let result: store.TurnRow = turn;
      if (decision.kind === 'turn') {
        const ended = await store.endTurn(sql, {
          turnId: turn.id,
          status: decision.turnStatus,
          error: decision.turnError,
          agentStatus: 'CANCELLED',
          now,
        });
        result = ended!;
        newEvents.push(
          decision.turnStatus === 'COMPLETED'
            ? { type: 'TURN_COMPLETED', turnId: turn.id, payload: { usage: usageJson(result) } }
            : { type: 'TURN_FAILED', turnId: turn.id, payload: { error: decision.turnError, reason: 'AGENT_FAILED' } },
        );
      } else {
        result = await store.touchTurn(sql, turn.id, now);
      }
      events.push(...(await appendEvents(sql, session.id, newEvents)));
      return result;
    });
  }

  async cancelTurn(
    workspaceId: string,
    input: { turnId: string; reason?: string | null },
    clientId = input.turnId,
  ): Promise<store.TurnRow> {
    const reason = errorText(input.reason, 'reason');
    return this.write(async (sql, events) => {
      const { session, turn } = await this.lockTurn(sql, workspaceId, input.turnId, clientId);
      requireActive(turn, clientId);
      const ended = await store.endTurn(sql, {
        turnId: turn.id,
        status: 'CANCELLED',
        error: reason ?? 'Cancelled.',
        agentStatus: 'CANCELLED',
        now: new Date(),
      });
      events.push(...(await appendEvents(sql, session.id, [{ type: 'TURN_CANCELLED', turnId: turn.id, payload: { reason } }])));
      return ended!;
    });
  }

  /** Keeps an ACTIVE turn from being failed as stale. */
  async heartbeatTurn(workspaceId: string, turnId: string, clientId = turnId): Promise<store.TurnRow> {
    return this.write(async (sql) => {
      const { turn } = await this.lockTurn(sql, workspaceId, turnId, clientId);
      requireActive(turn, clientId);
      return store.touchTurn(sql, turn.id, new Date());
    });
  }

  /**
   * Fails every ACTIVE turn idle for longer than the timeout. Safe to run on every instance at
   * once: each turn is re-checked and ended under its session's lock by a conditional update, so
   * exactly one instance fails it and writes its TurnFailed event. Returns the ids it failed.
   */
  async sweep(now = new Date()): Promise<string[]> {
    const idleBefore = new Date(now.getTime() - this.options.turnTimeoutMs);
    const candidates = await store.staleTurns(this.sql, idleBefore, SWEEP_BATCH);
    const failed: string[] = [];
    const error = staleTurnError(this.options.turnTimeoutMs);
    for (const candidate of candidates) {
      const ended = await this.write(async (sql, events) => {
        if (!(await store.lockSessionById(sql, candidate.sessionId))) return null;
        const row = await store.endTurn(sql, { turnId: candidate.id, status: 'FAILED', error, agentStatus: 'FAILED', now, idleBefore });
        if (!row) return null;
        events.push(
          ...(await appendEvents(sql, candidate.sessionId, [
            { type: 'TURN_FAILED', turnId: row.id, payload: { error, reason: 'TIMEOUT' } },
          ])),
        );
        return row;
      });
      if (ended) failed.push(ended.id);
    }
    if (failed.length) this.logger.warn('failed stale turns', { turnIds: failed, timeoutMs: this.options.turnTimeoutMs });
    return failed;
  }

  /** Runs `sweep` every `sweepIntervalMs` until `stop`. */
  startSweeper() {
    if (this.sweepTimer) return;
    this.sweepTimer = setInterval(() => {
      if (this.sweeping) return;
      this.sweeping = this.sweep()
        .catch((error: unknown) => this.logger.error('stale-turn sweep failed', { error }))
        .finally(() => (this.sweeping = null));
    }, this.options.sweepIntervalMs);
    this.sweepTimer.unref();
  }

  /** Stops the sweeper and waits for a sweep in progress. */
  async stop() {
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    this.sweepTimer = null;
    await this.sweeping;
  }
}
