import { createHash } from 'node:crypto';
import { uuidv7 } from '../db/ids.js';
import { asSql, type Tx } from '../db/sql.js';
import { appendMessageRows, type AppendedMessage } from '../db/stores/append.js';
import { createAttachment, keepBlob } from '../db/stores/attachments.js';
import { appendSubSessionWrappers } from '../db/stores/events.js';
import { contentColumns, findToolCalls } from '../db/stores/messages.js';
import { type MessageSnapshot, messageSnapshot } from '../db/session-events.js';
import type { LockedSession } from '../db/stores/sessions.js';
import { touchIfActive, turnStatusIn } from '../db/stores/turns.js';
import { badInput, notFound } from '../domain/errors.js';
import { clipSegments, visibleSegments } from '../domain/lineage.js';
import {
  type AttachmentUpload,
  type DraftMessage,
  type DraftPart,
  type MessageInputData,
  toolCallIdsOf,
  toolResultIdsOf,
} from '../domain/parts.js';
import type { TextCaps } from '../domain/limits.js';
import { partTokenTexts } from '../domain/tokens.js';
import { turnNotActive } from '../domain/turns.js';
import type { AttachmentStoredPart, StoredPart } from '../domain/types.js';
import type { Message, Session } from '../generated/prisma/client.js';
import type { SessionEventMessage } from '../pubsub/bus.js';
import type { TokenPrecount } from '../caches/token-precount.js';
import { AppendBatcher } from './append-batcher.js';
import { publishAll } from './event-log.js';
import { draftBatch, readUploads } from './session-input.js';
import type { SessionWrites } from './session-writes.js';

/** The session row an append left, and the messages it wrote. */
export interface AppendedMessages {
  session: Session;
  messages: Message[];
}

/** Messages a tool result's call is looked for among first, before the whole history. */
const RECENT_WINDOW = 64;

/**
 * Appends messages to a session: checked and counted before any lock, then written with the
 * session locked (or, for a plain append, in one statement batched with the other calls of the
 * moment), and their MESSAGE_ADDED events published after the commit.
 */
export class MessageAppends {
  /** Plain appends arriving together are written together (see append-batcher.ts). */
  private readonly batcher: AppendBatcher;

  constructor(
    private readonly writes: SessionWrites,
    /** The backend's caps (`AppRuntime.caps`): what a message's text may grow to. */
    private readonly caps: TextCaps,
    /** The app's token pre-count: long texts are counted in its worker before rows are built. */
    private readonly precount: TokenPrecount,
  ) {
    this.batcher = new AppendBatcher(writes.sql);
  }

  async append(
    workspaceId: string,
    sessionId: string,
    inputs: MessageInputData[],
    options: { turnId: string | null; agentId: string | null; turnLabel?: string },
    clientId?: string,
  ): Promise<AppendedMessages> {
    const drafts = draftBatch(await readUploads(inputs, this.caps), false, this.caps);
    if (options.agentId !== null && !options.agentId.trim()) throw badInput('agentId must not be empty.');
    if (options.turnId === null && unansweredToolResults(drafts).size === 0 && !drafts.some(hasUpload)) {
      // Nothing to check against the database and nothing to store but the rows: the append is one
      // statement (see db/stores/append.ts), its tokens counted before it is sent.
      const prepared = await prepareMessages(this.precount, drafts as StoredDraft[], options.agentId);
      // Written with the other calls of the moment in one statement (see append-batcher.ts).
      const batched = await this.batcher.append({ workspaceId, sessionId, messages: prepared }, (session, now) => {
        const events: SessionEventMessage[] = [];
        const result = this.appended(session, prepared, null, now, events);
        publishAll(this.writes.bus, events);
        return result;
      });
      if (batched.kind === 'appended') return batched.result;
      if (batched.kind === 'locked') {
        // The session is held by another transaction: this statement waits for it.
        const fast = await this.writes.retrying(async (events) => {
          const now = new Date();
          const session = await appendMessageRows(this.writes.sql, workspaceId, sessionId, null, prepared, now, false);
          return session && this.appended(session, prepared, null, now, events);
        });
        if (fast) return fast;
      }
      // Not appended: no such session (the locked path below says so) or a sub-session (whose
      // events are wrapped into the logs above it, in a transaction).
    }
    return this.writes.write(async (tx, events) => {
      const session = await this.writes.lock(tx, workspaceId, sessionId, clientId);
      if (options.turnId) {
        const status = await turnStatusIn(asSql(tx), sessionId, options.turnId);
        const turnLabel = options.turnLabel ?? options.turnId;
        if (!status) throw notFound('Turn', turnLabel);
        if (status !== 'ACTIVE') throw turnNotActive(status, turnLabel);
        await touchIfActive(asSql(tx), options.turnId, new Date());
      }
      return this.insert(tx, session, drafts, options, events);
    });
  }

  /** Writes drafts to a session this transaction has locked (or just made), with their attachments, and collects the events. */
  async insert(
    tx: Tx,
    session: LockedSession,
    drafts: DraftMessage[],
    options: { turnId: string | null; agentId: string | null },
    events: SessionEventMessage[],
  ): Promise<AppendedMessages> {
    await checkToolResults(
      tx,
      session,
      drafts.map((d) => d.parts),
    );
    const stored: StoredDraft[] = [];
    for (const draft of drafts) stored.push({ ...draft, parts: await storeAttachments(tx, session, draft.parts) });
    const prepared = await prepareMessages(this.precount, stored, options.agentId);
    const now = new Date();
    const updated = await appendMessageRows(tx, session.workspaceId, session.id, options.turnId, prepared, now, true);
    // The session is locked by this transaction: it cannot have gone.
    const added = events.length;
    const result = this.appended(updated!, prepared, options.turnId, now, events);
    if (updated!.parentTurnId) events.push(...(await appendSubSessionWrappers(tx, session.id, events.slice(added))));
    return result;
  }

  /** The rows an append wrote, and its events to publish, from the session row it left. */
  private appended(
    session: Session,
    prepared: AppendedMessage[],
    turnId: string | null,
    now: Date,
    events: SessionEventMessage[],
  ): { session: Session; messages: Message[] } {
    const firstPosition = session.messageCount - prepared.length;
    const firstSequence = session.eventSequence - prepared.length + 1;
    const messages = prepared.map(
      (m, i): Message => ({
        id: m.id,
        sessionId: session.id,
        position: firstPosition + i,
        role: m.role,
        ...m.content,
        turnId,
        agentId: m.agentId,
        createdAt: m.createdAt,
        updatedAt: m.createdAt,
        // The database's to compute (a generated column); nothing reads it from a written row.
        contentBytes: null,
      }),
    );
    events.push(
      ...messages.map(
        (row, i): SessionEventMessage => ({
          id: prepared[i].eventId,
          sessionId: session.id,
          sequence: firstSequence + i,
          type: 'MESSAGE_ADDED',
          turnId,
          messageId: row.id,
          payload: { index: row.position, role: row.role, generating: row.generating },
          createdAt: now.toISOString(),
          ...withSnapshot(row),
        }),
      ),
    );
    return { session, messages };
  }
}

/** A tool result must name a call made earlier in the session (or earlier in the same batch). */
export async function checkToolResults(tx: Tx, session: LockedSession, batches: DraftPart[][]) {
  const missing = unansweredToolResults(batches.map((parts) => ({ parts })));
  if (missing.size === 0) return;
  const segments = visibleSegments(session);
  const findCalls = async (lo: number, hi: number) => {
    for (const id of await findToolCalls(tx, clipSegments(segments, lo, hi), [...missing])) missing.delete(id);
  };
  // Results almost always answer a recent call: look there first, then the whole history.
  const recent = Math.max(0, session.messageCount - RECENT_WINDOW);
  await findCalls(recent, session.messageCount);
  if (missing.size > 0 && recent > 0) await findCalls(0, recent);
  if (missing.size > 0) {
    const [first] = missing;
    throw badInput(`Tool result for call id "${first}" does not answer any tool call made earlier in this session.`, {
      callIds: [...missing],
    });
  }
}

export async function storeAttachments(tx: Tx, session: LockedSession, parts: DraftPart[]): Promise<StoredPart[]> {
  const stored: StoredPart[] = [];
  for (const part of parts) {
    if (part.type !== 'attachmentUpload') {
      stored.push(part);
      continue;
    }
    const kept = await storeAttachment(tx, session, part);
    stored.push(part.providerMetadata === undefined ? kept : { ...kept, providerMetadata: part.providerMetadata });
  }
  return stored;
}

/** SHA-256 in hex: texts (within the string cap) on the thread, bytes in WebCrypto (libuv's pool, off the request thread). */
const sha256Hex = async (value: Uint8Array | string) =>
  typeof value === 'string'
    ? createHash('sha256').update(value).digest('hex')
    : Buffer.from(await crypto.subtle.digest('SHA-256', value as Uint8Array<ArrayBuffer>)).toString('hex');

/** One checked attachment stored (its bytes once per workspace); the part that refers to it. */
async function storeAttachment(tx: Tx, session: LockedSession, part: AttachmentUpload): Promise<AttachmentStoredPart> {
  const id = uuidv7();
  const base = { id, workspaceId: session.workspaceId, sessionId: session.id, name: part.name, mimeType: part.mimeType };
  const ref = { type: 'attachment' as const, attachmentId: id, name: part.name, mimeType: part.mimeType };
  switch (part.kind) {
    case 'TEXT': {
      const size = Buffer.byteLength(part.content, 'utf8');
      await createAttachment(tx, { ...base, size, kind: 'TEXT', sha256: await sha256Hex(part.content), content: part.content });
      return { ...ref, size };
    }
    case 'BYTES': {
      const sha256 = await sha256Hex(part.bytes);
      await keepBlob(asSql(tx), session.workspaceId, sha256, part.bytes);
      const dims = { width: part.width, height: part.height, pages: part.pages };
      await createAttachment(tx, { ...base, size: part.bytes.length, kind: 'BYTES', sha256, blobSha256: sha256, ...dims });
      return { ...ref, size: part.bytes.length, kind: 'BYTES', ...definedOnly(dims) };
    }
    case 'URL':
      await createAttachment(tx, { ...base, size: 0, kind: 'URL', sha256: await sha256Hex(part.url), url: part.url });
      return { ...ref, size: 0, kind: 'URL', url: part.url };
    case 'PROVIDER_FILE': {
      const { provider, fileId } = part.providerFile;
      const sha256 = await sha256Hex(`${provider}:${fileId}`);
      await createAttachment(tx, { ...base, size: 0, kind: 'PROVIDER_FILE', sha256, providerFile: { provider, fileId } });
      return { ...ref, size: 0, kind: 'PROVIDER_FILE', providerFile: { provider, fileId } };
    }
  }
}

const definedOnly = <T extends Record<string, unknown>>(value: T): Partial<T> =>
  Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined && v !== null)) as Partial<T>;

/** A draft whose attachments are stored: its parts are the parts to store. */
type StoredDraft = Omit<DraftMessage, 'parts'> & { parts: StoredPart[] };

const hasUpload = (draft: DraftMessage) => draft.parts.some((part) => part.type === 'attachmentUpload');

/** Tool results of the batch that no earlier message of the same batch answers. */
function unansweredToolResults(batch: readonly { parts: readonly DraftPart[] }[]): Set<string> {
  const seen = new Set<string>();
  const missing = new Set<string>();
  for (const { parts } of batch) {
    for (const id of toolResultIdsOf(parts)) if (!seen.has(id)) missing.add(id);
    for (const id of toolCallIdsOf(parts)) seen.add(id);
  }
  return missing;
}

/**
 * Ids, token counts and the other content columns of messages to append, computed before any lock
 * is taken: long texts are counted in the token worker, short ones here.
 */
async function prepareMessages(
  precount: TokenPrecount,
  drafts: readonly StoredDraft[],
  agentId: string | null,
): Promise<AppendedMessage[]> {
  await precountFinished(
    precount,
    drafts.filter((d) => !d.generating).map((d) => d.parts),
  );
  const now = Date.now();
  return drafts.map((draft, i) => ({
    id: uuidv7(),
    eventId: uuidv7(),
    role: draft.role,
    content: contentColumns(draft.parts, draft.generating, precount),
    agentId: draft.agentId ?? agentId,
    // Strictly increasing timestamps within a batch keep createdAt order equal to index order.
    createdAt: new Date(now + i),
  }));
}

/** A live event's copy of its message (see `messageSnapshot`), when it is small enough to carry. */
export function withSnapshot(row: Message): { message?: MessageSnapshot } {
  const message = messageSnapshot(row);
  return message ? { message } : {};
}

/**
 * Counts the long token texts of finished messages in the token worker before their rows are
 * built: not every one is an argument the schema boundary counted already (a tool call's
 * arguments are JSON, a streamed message's text grew through many small appends), and counting
 * a long one on the request thread would stall every other client.
 */
export function precountFinished(precount: TokenPrecount, messages: readonly (readonly StoredPart[])[]): Promise<void> {
  return precount.count(messages.flatMap((parts) => parts.flatMap(partTokenTexts)));
}
