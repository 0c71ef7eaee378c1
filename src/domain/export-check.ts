/**
 * The checks an import makes on the whole file, line by line, before anything is written: the
 * order (header first, `end` last, each session after those it refers to, its rows after it), the
 * references (every id a line names was defined by an earlier line), the counts (a session's
 * messages are exactly positions [forkIndex, messageCount), its turns, compactions and transforms
 * number 1 … n) and the attachments' content (size, SHA-256, and the checks appends make on bytes).
 * Pure: what it keeps is per session and per turn or attachment id, never per message.
 */
import { createHash } from 'node:crypto';
import { checkBytes, decodeBase64 } from './attachment-bytes.js';
import { badInput } from './errors.js';
import type { AttachmentLine, ExportLine, MessageLine, SessionLine, TransformLine } from './export-format.js';
import type { TextCaps } from './limits.js';
import { childLineage } from './lineage.js';

/** What an import keeps of a session it read: enough to place its rows and resolve references by position. */
export interface CheckedSession {
  line: SessionLine;
  /** Turn ids of this session (checks `activeTurnId`). */
  turns: Set<string>;
}

const sha256Hex = (value: Uint8Array | string) => createHash('sha256').update(value).digest('hex');

export class ExportChecker {
  readonly sessions = new Map<string, CheckedSession>();
  readonly turns = new Set<string>();
  readonly attachments = new Set<string>();
  private header = false;
  private ended = false;
  private current: CheckedSession | null = null;
  private nextPosition = 0;
  private turnCount = 0;
  private compactionCount = 0;
  private transformCount = 0;
  private messages = 0;

  constructor(private readonly caps: TextCaps) {}

  /** Checks one parsed line in its place; BAD_USER_INPUT says what is wrong with it. */
  check(line: ExportLine): void {
    if (this.ended) throw badInput('nothing may follow the "end" line.');
    if (!this.header) {
      if (line.type !== 'header') throw badInput('the first line must be the header ({"type":"header","format":…,"version":…}).');
      this.header = true;
      return;
    }
    switch (line.type) {
      case 'header':
        throw badInput('a second header.');
      case 'session':
        this.closeSession();
        this.openSession(line);
        return;
      case 'end':
        this.closeSession();
        if (line.sessions !== this.sessions.size || line.messages !== this.messages) {
          throw badInput(
            `"end" counts ${line.sessions} sessions and ${line.messages} messages; the file holds ${this.sessions.size} and ${this.messages}.`,
          );
        }
        this.ended = true;
        return;
    }
    const session = this.current;
    if (!session) throw badInput(`a ${line.type} line before any session line.`);
    const owner = line.type === 'usage' ? null : line.sessionId;
    if (owner !== null && owner !== session.line.id)
      throw badInput(`"sessionId" ${owner} is not the session these lines follow (${session.line.id}).`);
    switch (line.type) {
      case 'turn':
        if (line.number !== ++this.turnCount) throw badInput(`turn number ${line.number}: expected ${this.turnCount}.`);
        this.defineId(this.turns, line.id, 'turn');
        session.turns.add(line.id);
        return;
      case 'usage':
        if (!session.turns.has(line.turnId)) throw badInput(`"turnId" ${line.turnId} is not a turn of this session defined above.`);
        return;
      case 'attachment':
        this.checkAttachment(line);
        this.defineId(this.attachments, line.id, 'attachment');
        return;
      case 'message':
        this.checkMessage(line);
        return;
      case 'compaction':
        if (line.ordinal !== ++this.compactionCount)
          throw badInput(`compaction ordinal ${line.ordinal}: expected ${this.compactionCount}.`);
        if (line.uptoIndex < 1 || line.uptoIndex > session.line.messageCount)
          throw badInput(`"uptoIndex" ${line.uptoIndex} is outside 1 … messageCount.`);
        return;
      case 'transform':
        this.checkTransform(line, session.line);
        return;
    }
  }

  /** Checks that the file ended with its `end` line. */
  finish(): void {
    if (!this.ended) throw badInput('the file ends without its "end" line: it was cut short.');
  }

  private defineId(set: Set<string>, id: string, what: string): void {
    if (set.has(id)) throw badInput(`${what} ${id} is defined twice.`);
    set.add(id);
  }

  private openSession(s: SessionLine): void {
    if (this.sessions.has(s.id)) throw badInput(`session ${s.id} is defined twice.`);
    const known = (id: string) => this.sessions.get(id);
    const rootLike = () => {
      if (
        s.rootId !== s.id ||
        s.ancestorIds.length ||
        s.depth !== 0 ||
        s.forkIndex !== null ||
        s.lineage.length ||
        s.parentId ||
        s.forkPointMessageId
      ) {
        throw badInput(
          `a ${s.kind} session is the root of its own tree: rootId = id, no parentId, ancestors, forkIndex, fork point or lineage.`,
        );
      }
    };
    if (s.kind === 'ROOT') {
      rootLike();
      if (s.parentTurnId !== null) throw badInput('a ROOT session has no parentTurnId.');
    } else if (s.kind === 'SUB_AGENT') {
      rootLike();
      if (s.parentTurnId === null || !this.turns.has(s.parentTurnId))
        throw badInput(`"parentTurnId" ${s.parentTurnId} is not a turn defined above.`);
      if (s.agentId === null || s.parentMessageCount === null)
        throw badInput('a SUB_AGENT session has an agentId and a parentMessageCount.');
    } else {
      const parent = s.parentId === null ? undefined : known(s.parentId);
      if (!parent) throw badInput(`"parentId" ${s.parentId} is not a session defined above.`);
      if (s.parentTurnId !== null) throw badInput('a FORK session has no parentTurnId.');
      const p = parent.line;
      const ancestors = [...p.ancestorIds, p.id];
      if (s.ancestorIds.length !== ancestors.length || s.ancestorIds.some((id, i) => id !== ancestors[i]) || s.rootId !== p.rootId) {
        throw badInput('"ancestorIds" are the parent\'s ancestors and the parent, and "rootId" is the parent\'s root.');
      }
      if (s.depth !== ancestors.length) throw badInput(`"depth" is the number of ancestors (${ancestors.length}).`);
      if (s.forkIndex === null || s.forkIndex >= p.messageCount || s.forkPointMessageId === null) {
        throw badInput(`"forkIndex" must be a message index of the parent (below ${p.messageCount}), with its "forkPointMessageId".`);
      }
      this.checkLineage(s, p);
    }
    const start = s.forkIndex ?? 0;
    if (s.messageCount < start) throw badInput(`"messageCount" ${s.messageCount} is below "forkIndex" ${start}.`);
    this.current = { line: s, turns: new Set() };
    this.sessions.set(s.id, this.current);
    this.nextPosition = start;
    this.turnCount = 0;
    this.compactionCount = 0;
    this.transformCount = 0;
  }

  /**
   * A fork's lineage is what forking its parent at `forkIndex` gives (`childLineage`): one entry
   * per ancestor, root first, with those ranges; each entry's compaction and transform counts
   * within what that ancestor holds.
   */
  private checkLineage(s: SessionLine, parent: SessionLine): void {
    const expected = childLineage({ ...parent, compactionCount: 0, transformCount: 0 }, s.forkIndex!);
    const ok =
      s.lineage.length === expected.length &&
      s.lineage.every((entry, i) => {
        const want = expected[i];
        const owner = this.sessions.get(entry.sessionId)?.line;
        return (
          owner !== undefined &&
          entry.sessionId === want.sessionId &&
          entry.start === want.start &&
          entry.end === want.end &&
          entry.compactions <= owner.compactionCount &&
          (entry.transforms ?? 0) <= owner.transformCount
        );
      });
    if (!ok)
      throw badInput(
        '"lineage" must be what forking the parent at "forkIndex" gives: one entry per ancestor, root first, with those ranges.',
      );
  }

  private closeSession(): void {
    const session = this.current;
    if (!session) return;
    const s = session.line;
    const counts: [string, number, number][] = [
      ['messages', this.nextPosition, s.messageCount],
      ['turns', this.turnCount, s.turnCount],
      ['compactions', this.compactionCount, s.compactionCount],
      ['transforms', this.transformCount, s.transformCount],
    ];
    for (const [what, seen, declared] of counts) {
      if (seen !== declared) throw badInput(`session ${s.id} declares ${declared} for its ${what} but its lines reach ${seen}.`);
    }
    if (s.activeTurnId !== null && !session.turns.has(s.activeTurnId))
      throw badInput(`"activeTurnId" ${s.activeTurnId} is not a turn of session ${s.id}.`);
    this.current = null;
  }

  private checkMessage(m: MessageLine): void {
    if (m.position !== this.nextPosition) throw badInput(`message position ${m.position}: expected ${this.nextPosition}.`);
    this.nextPosition++;
    this.messages++;
    if (m.turnId !== null && !this.turns.has(m.turnId)) throw badInput(`"turnId" ${m.turnId} is not a turn defined above.`);
    for (const part of m.parts) {
      if (part.type === 'attachment' && !this.attachments.has(part.attachmentId as string)) {
        throw badInput(`attachment part names ${String(part.attachmentId)}, not an attachment defined above.`);
      }
    }
  }

  private checkTransform(t: TransformLine, s: SessionLine): void {
    if (t.ordinal !== ++this.transformCount) throw badInput(`transform ordinal ${t.ordinal}: expected ${this.transformCount}.`);
    const strip = t.kind === 'STRIP_TOOL_OUTPUTS';
    if (strip ? t.messageId !== null || t.position > s.messageCount : t.messageId === null || t.position >= s.messageCount) {
      throw badInput(
        strip
          ? 'a STRIP_TOOL_OUTPUTS transform names no message and ends within the session.'
          : '"messageId" and "position" name a message of the session.',
      );
    }
  }

  private checkAttachment(a: AttachmentLine): void {
    const expect = (ok: boolean, message: string) => {
      if (!ok) throw badInput(message);
    };
    switch (a.kind) {
      case 'TEXT': {
        expect(a.content !== null && a.data === null, 'a TEXT attachment has "content" and no "data".');
        const size = Buffer.byteLength(a.content!, 'utf8');
        expect(size <= this.caps.attachmentBytes, `the content is larger than ${this.caps.attachmentBytes} bytes, the cap on this server.`);
        expect(size === a.size && sha256Hex(a.content!) === a.sha256, '"size" and "sha256" are not those of the content.');
        return;
      }
      case 'BYTES': {
        expect(a.data !== null && a.content === null, 'a BYTES attachment has "data" (base64) and no "content".');
        const bytes = decodeBase64(a.data!, '"data"');
        expect(bytes.length <= this.caps.fileBytes, `the bytes are more than ${this.caps.fileBytes}, the cap on this server.`);
        expect(bytes.length === a.size && sha256Hex(bytes) === a.sha256, '"size" and "sha256" are not those of the bytes.');
        const checked = checkBytes(a.mimeType, bytes, `attachment ${a.name}`);
        const same = (read: number | undefined, declared: number | null) => (read ?? null) === declared;
        expect(
          same(checked.width, a.width) && same(checked.height, a.height) && same(checked.pages, a.pages),
          '"width", "height" and "pages" are not those read from the bytes.',
        );
        return;
      }
      case 'URL':
        expect(
          a.url !== null && /^https:\/\//i.test(a.url) && a.content === null && a.data === null,
          'a URL attachment has an https "url" only.',
        );
        return;
      case 'PROVIDER_FILE': {
        const file = a.providerFile as { provider?: unknown; fileId?: unknown } | null;
        expect(
          typeof file?.provider === 'string' && typeof file.fileId === 'string',
          'a PROVIDER_FILE attachment has "providerFile" { provider, fileId }.',
        );
        return;
      }
    }
  }
}
