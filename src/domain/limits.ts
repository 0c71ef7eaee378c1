/** The bounds on what one request may carry: per backend (`TextCaps`) and on every backend (`LIMITS`). */

/**
 * The longest string argument by backend, in UTF-16 units (MAX_STRING_CHARS overrides it).
 * Storing a string costs the request thread time in proportion to its size that cannot be moved
 * off it (body parse, Prisma's parameter walk, the driver's bind message); each backend's cap keeps
 * that within the 50 ms rule. The embedded backend runs the whole statement in process (bind, JSON
 * parse, TOAST compression), so its cap is the smaller.
 */
export const DEFAULT_STRING_CHARS = { postgres: 1024 * 1024, pglite: 256 * 1024 } as const;

/**
 * The caps that follow the longest string, so they depend on the backend (`textCaps`); they reach
 * the checks through the request context (`RequestContext.caps`), never through a global.
 */
export interface TextCaps {
  /** Any string argument other than ids and JSON (text, tool results, summaries, system prompts), in UTF-16 units. */
  stringLength: number;
  /** An attachment's content, in UTF-8 bytes (the same number as `stringLength`, the same cost reasoning). */
  attachmentBytes: number;
  /**
   * All strings and JSON of one field's arguments together, in UTF-16 units: bounds what one
   * request can make the server count and store (1,000 messages of 1,000 parts each would
   * otherwise pass every per-string cap): one full-size string and the small arguments beside it.
   */
  argumentsLength: number;
  /**
   * A request body, in bytes: room for a full-size string written as UTF-8 JSON (up to 3 bytes a
   * character), at least 1 MiB. Refused from its Content-Length before it is read, so an oversized
   * body costs the request thread nothing.
   */
  requestBytes: number;
  /**
   * The message content one operation's answer may carry, in UTF-8 bytes of text and parts
   * (`ResponseBudget`): the pages of one request share it, whatever its aliases and nesting. Eight
   * strings at the cap: on PGlite every byte of it is read on the request thread, so it follows the
   * backend's string cap (2 MiB there, 8 MiB on PostgreSQL).
   */
  responseContentBytes: number;
  /**
   * An attachment's bytes (`data`, `upload`), 4 times the string cap: 4 MiB on PostgreSQL, 1 MiB
   * on the embedded backend. A file crosses the request thread as base64 text several times (the
   * statement's parameter, the row read back, the payload's JSON), each a copy in proportion to its
   * size, and on PGlite the statement runs on the thread too: the cap keeps one request's share of
   * the thread near the string cap's (docs/performance.md). A multipart upload is refused as it
   * streams past it; `data` (base64 in the JSON body) is bounded by `requestBytes` too.
   */
  fileBytes: number;
  /** A multipart request's body, in bytes: the operations (`requestBytes`) and two files at the cap, or more smaller ones. */
  multipartBytes: number;
}

/** The caps for a longest string of `stringLength` UTF-16 units. */
export function textCaps(stringLength: number): TextCaps {
  return {
    stringLength,
    attachmentBytes: stringLength,
    argumentsLength: stringLength + 64 * 1024,
    requestBytes: Math.max(4 * stringLength, 1024 * 1024),
    responseContentBytes: 8 * stringLength,
    fileBytes: 4 * stringLength,
    multipartBytes: Math.max(4 * stringLength, 1024 * 1024) + 8 * stringLength,
  };
}

/** The caps that are the same on every backend. */
export const LIMITS = {
  messagesPerCall: 1000,
  partsPerMessage: 1000,
  /** Client-chosen identifiers: agent ids, tool call ids, tool names, global IDs. */
  idLength: 256,
  titleChars: 10_000,
  /** Nesting of a JSON argument (settings, metadata, tool arguments, turn context). */
  jsonDepth: 64,
  /** A JSON argument's size as serialized, in UTF-16 units (all arguments together stay within `TextCaps.argumentsLength`). */
  jsonLength: 1024 * 1024,
  /** Files in one multipart request. */
  filesPerRequest: 16,
  /**
   * An import body (`POST /import`), in bytes: read line by line and kept in a temporary file
   * past a few MiB, so its size costs disk, not memory; the write is one transaction.
   */
  importBytes: 512 * 1024 * 1024,
  /**
   * A ChatGPT or Claude data export (`POST /import?from=…`), in bytes: one JSON document, parsed
   * whole on the request thread, so kept to what parses within the 50 ms rule.
   */
  foreignExportBytes: 8 * 1024 * 1024,
};

/**
 * The longest line of an import body, in bytes: an attachment line carries its bytes as base64
 * (4/3 of `fileBytes`), a message line a full-size request's worth of text.
 */
export function importLineBytes(caps: TextCaps): number {
  return Math.max(caps.requestBytes, Math.ceil(caps.fileBytes / 3) * 4) + 64 * 1024;
}

/**
 * The message content one page of messages may carry (`Session.messages`, `Session.timeline`,
 * `Turn.messages`, `searchMessages`), in
 * UTF-8 bytes of text and parts as JSON: a page holds the messages that fit, and always its first
 * one (a longer message comes alone). A page cut short says so with `hasNextPage` (`hasPreviousPage`
 * for last/before), so a client pages on and misses nothing. Each message's size is a generated
 * column (`Message.contentBytes`), so the cut is made in the page's own statement, before any
 * content is read: on PGlite, reading a row's content is work on the request thread.
 */
export const PAGE_CONTENT_BYTES = 1024 * 1024;
