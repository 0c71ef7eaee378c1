/**
 * What `/attachments/<id>` serves: one attachment of a workspace, whole or a byte range, with what
 * the HTTP layer needs for its headers. Another workspace's attachment does not exist here.
 */
import { type AttachmentSummary, findAttachmentSummaries, readAttachmentRange } from '../db/stores/attachments.js';
import type { SqlClient } from '../db/sql.js';

export interface Download {
  attachment: AttachmentSummary;
  /** Bytes of the whole content. */
  total: number;
  /** [start, end] inclusive, when a range was asked for and can be served. */
  range: { start: number; end: number } | null;
  /** The bytes served (the range, or all); null for URL and PROVIDER_FILE. */
  bytes: Uint8Array | null;
}

/** A `Range` header's one range, resolved against `total`: 'none' (absent, or several ranges: the whole is served), 'unsatisfiable', or [start, end]. */
export function rangeOf(header: string | null, total: number): 'none' | 'unsatisfiable' | { start: number; end: number } {
  if (!header) return 'none';
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match) return header.includes(',') ? 'none' : 'unsatisfiable';
  const [, from, to] = match;
  if (from === '' && to === '') return 'unsatisfiable';
  if (from === '') {
    const suffix = Number(to);
    if (suffix === 0 || total === 0) return 'unsatisfiable';
    return { start: Math.max(0, total - suffix), end: total - 1 };
  }
  const start = Number(from);
  if (start >= total) return 'unsatisfiable';
  const end = to === '' ? total - 1 : Math.min(Number(to), total - 1);
  return end < start ? 'unsatisfiable' : { start, end };
}

export class AttachmentDownloads {
  constructor(private readonly sql: SqlClient) {}

  /** The attachment and its bytes (the range asked for, or all); null when the workspace has none of that id. */
  async read(
    workspaceId: string,
    id: string,
    rangeHeader: string | null,
  ): Promise<Download | { unsatisfiable: true; total: number } | null> {
    const [attachment] = await findAttachmentSummaries(this.sql, workspaceId, [id]);
    if (!attachment) return null;
    if (attachment.kind === 'URL' || attachment.kind === 'PROVIDER_FILE') return { attachment, total: 0, range: null, bytes: null };
    const total = attachment.size;
    const range = rangeOf(rangeHeader, total);
    if (range === 'unsatisfiable') return { unsatisfiable: true, total };
    const [start, end] = range === 'none' ? [0, total - 1] : [range.start, range.end];
    const bytes = (await readAttachmentRange(this.sql, workspaceId, id, start, end - start + 1)) ?? new Uint8Array(0);
    return { attachment, total, range: range === 'none' ? null : range, bytes };
  }
}
