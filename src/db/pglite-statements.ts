/**
 * Prepared statements on PGlite, through the PostgreSQL wire protocol.
 *
 * PGlite's `query` parses, analyses and plans every statement it is sent and keeps no statement a
 * later call could name. Here a named statement (`QueryOptions.name`) is prepared once on PGlite's
 * one connection (Parse and Describe of a named statement), and each call then sends Bind, Execute
 * and Sync in one message: PostgreSQL runs the plan it keeps, as a prepared statement on PostgreSQL.
 *
 * Locking, through PGlite's public API only. Inside the caller's PGlite transaction the statement
 * runs under `runExclusive` (the query lock; the transaction holds the connection). Outside one it
 * must not run in the middle of someone else's transaction: under the query lock, when no
 * transaction block is open (`isInTransaction`), it runs and commits on its own, between two other
 * statements; when one is open, it waits for the connection as `query` does, inside
 * `pglite.transaction` (its own BEGIN … COMMIT, one statement: the same rows and errors).
 *
 * Parameters are written by PGlite's serializers for the types PostgreSQL infers for them, and
 * columns read by the same parsers `query` uses, so rows and errors (PGlite's `DatabaseError`, with
 * the SQLSTATE and constraint) are the same either way. `deviations.pgliteStatements` off
 * (`buildApp`, `createDatabase`'s `pgliteStatements`) sends every statement through `query`.
 */
import type { PGlite, messages } from '@electric-sql/pglite';

/** Reads one column's text (`parsers` of PGlite's query options). */
export type TextParser = (text: string, typeId: number) => unknown;

const STATEMENT_NAME = /^sg_[a-z0-9_]{1,50}$/;

/** A statement prepared on the connection: how to write each parameter, and each column's name and reader. */
export interface PreparedStatement {
  readonly name: string;
  readonly serializers: readonly (((value: unknown) => string) | undefined)[];
  readonly columns: readonly { name: string; typeId: number; parse: TextParser | undefined }[];
}

export class PgliteStatements {
  private readonly entries = new Map<string, { text: string; ready: Promise<PreparedStatement | null>; made: PreparedStatement | null }>();

  constructor(
    private readonly pglite: PGlite,
    /** Column readers by type id, before PGlite's own. */
    private readonly parsers: Record<number, TextParser>,
  ) {}

  /** The statement named `name`, prepared now if it is not yet; null: it cannot be, send its text. */
  prepare(name: string, text: string): Promise<PreparedStatement | null> {
    let entry = this.entries.get(name);
    if (!entry) {
      const ready = this.make(name, text).catch(() => null);
      const created = { text, ready, made: null as PreparedStatement | null };
      void ready.then((statement) => {
        created.made = statement;
      });
      this.entries.set(name, created);
      entry = created;
    }
    if (entry.text !== text) throw new Error(`two statements named ${name}`);
    return entry.ready;
  }

  /** The statement named `name` if it is already prepared (inside a transaction nothing is prepared); else null. */
  made(name: string | undefined, text: string): PreparedStatement | null {
    if (!name) return null;
    const entry = this.entries.get(name);
    return entry?.text === text ? entry.made : null;
  }

  /**
   * Runs a prepared statement with `values`: Bind, Execute and Sync in one message. `inTransaction`:
   * the caller's PGlite transaction holds the connection (then only the query lock is taken).
   */
  async run<T>(statement: PreparedStatement, values: readonly unknown[], inTransaction: boolean): Promise<T[]> {
    const message = bindAndExecute(statement, values);
    const messages = await this.send(message, inTransaction);
    // What `query` does after a statement outside a transaction (a no-op on the node filesystem).
    if (!inTransaction) await this.pglite.syncToFs();
    return rowsOf<T>(statement, messages);
  }

  /**
   * Sends `message` under PGlite's public locks: the query lock inside the caller's transaction;
   * outside one, the query lock while no transaction is open, else a transaction of its own.
   */
  private async send(message: Uint8Array, inTransaction: boolean): Promise<messages.BackendMessage[]> {
    const execute = () => {
      // Under the lock: the instance may have closed while this call waited for it.
      if (this.pglite.closed) return Promise.reject(new Error('PGlite is closed'));
      return this.pglite.execProtocolStream(message, { syncToFs: false });
    };
    if (inTransaction) return this.pglite.runExclusive(execute);
    // Before the locks, as `query` does: PGlite's start takes them itself.
    await this.pglite.waitReady;
    if (!this.pglite.ready) throw new Error(this.pglite.closed ? 'PGlite is closed' : 'PGlite is closing');
    const alone = await this.pglite.runExclusive(async () => (!this.pglite.closed && this.pglite.isInTransaction() ? null : execute()));
    return alone ?? this.pglite.transaction(() => this.pglite.runExclusive(execute));
  }

  private async make(name: string, text: string): Promise<PreparedStatement | null> {
    if (!STATEMENT_NAME.test(name)) return null;
    const message = concat([frame('P', [cstring(name), cstring(text), int16(0)]), frame('D', [ascii('S'), cstring(name)]), SYNC]);
    const replies = await this.send(message, false);
    const parameters = replies.find((m): m is messages.ParameterDescriptionMessage => m.name === 'parameterDescription');
    const row = replies.find((m): m is messages.RowDescriptionMessage => m.name === 'rowDescription');
    if (!parameters) return null;
    return {
      name,
      serializers: parameters.dataTypeIDs.map((typeId) => this.pglite.serializers[typeId]),
      columns: (row?.fields ?? []).map((field) => ({
        name: field.name,
        typeId: field.dataTypeID,
        parse: this.parsers[field.dataTypeID] ?? this.pglite.parsers[field.dataTypeID],
      })),
    };
  }
}

/** The rows of a prepared statement's answer, as PGlite's `query` reads them (rowMode "object"). */
function rowsOf<T>(statement: PreparedStatement, replies: readonly messages.BackendMessage[]): T[] {
  const { columns } = statement;
  const rows: T[] = [];
  for (const reply of replies) {
    if (reply.name !== 'dataRow') continue;
    const { fields } = reply as messages.DataRowMessage;
    const row: Record<string, unknown> = {};
    for (let i = 0; i < columns.length; i++) {
      const text = fields[i];
      const column = columns[i];
      row[column.name] = text === null ? null : column.parse ? column.parse(text, column.typeId) : text;
    }
    rows.push(row as T);
  }
  return rows;
}

/**
 * Bind (the unnamed portal, every parameter and column as text), Execute (all rows) and Sync, as
 * one message, each parameter encoded straight into it (a batch's parameter can be a megabyte).
 */
function bindAndExecute(statement: PreparedStatement, values: readonly unknown[]): Uint8Array {
  const texts = values.map((value, i) => {
    if (value === null || value === undefined) return null;
    const serialize = statement.serializers[i];
    return serialize ? serialize(value) : String(value);
  });
  const sizes = texts.map((text) => (text === null ? -1 : Buffer.byteLength(text, 'utf8')));
  // Bind: its length, the portal and statement names, no parameter formats, the parameters, no result formats.
  let bindLength = 4 + 1 + Buffer.byteLength(statement.name, 'utf8') + 1 + 2 + 2 + 2;
  for (const size of sizes) bindLength += 4 + Math.max(size, 0);
  const out = Buffer.allocUnsafe(1 + bindLength + EXECUTE_AND_SYNC.length);
  let at = out.write('B', 0, 'latin1');
  at = out.writeInt32BE(bindLength, at);
  at = out.writeUInt8(0, at);
  at += out.write(statement.name, at, 'utf8');
  at = out.writeUInt8(0, at);
  at = out.writeInt16BE(0, at);
  at = out.writeInt16BE(texts.length, at);
  for (let i = 0; i < texts.length; i++) {
    at = out.writeInt32BE(sizes[i], at);
    const text = texts[i];
    if (text !== null) at += out.write(text, at, 'utf8');
  }
  at = out.writeInt16BE(0, at);
  EXECUTE_AND_SYNC.copy(out, at);
  return out;
}

function frame(type: string, body: readonly Buffer[]): Buffer {
  let length = 4;
  for (const part of body) length += part.length;
  const head = Buffer.allocUnsafe(5);
  head.write(type, 0, 'latin1');
  head.writeInt32BE(length, 1);
  return concat([head, ...body]);
}

const concat = (parts: readonly Buffer[]) => Buffer.concat(parts as Buffer[]);
const ascii = (text: string) => Buffer.from(text, 'latin1');
const cstring = (text: string) => Buffer.from(`${text}\0`, 'utf8');
const int16 = (n: number) => {
  const b = Buffer.allocUnsafe(2);
  b.writeInt16BE(n);
  return b;
};
const int32 = (n: number) => {
  const b = Buffer.allocUnsafe(4);
  b.writeInt32BE(n);
  return b;
};
const SYNC = frame('S', []);
/** Execute (the unnamed portal, all rows) and Sync. */
const EXECUTE_AND_SYNC = concat([frame('E', [cstring(''), int32(0)]), SYNC]);
