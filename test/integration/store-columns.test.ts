import { describe, expect, it } from 'vitest';
import { SqlParams, type SqlClient } from '../../src/db/sql.js';
import { API_KEY_COLUMNS, WORKSPACE_COLUMNS } from '../../src/db/stores/api-keys.js';
import { SHARE_LINK_COLUMNS } from '../../src/db/stores/share-links.js';
import { APPEND_INSERT_COLUMNS, STREAM_EVENT_INSERT_COLUMNS } from '../../src/db/stores/append.js';
import { ASSEMBLY_PREFIX_INSERT } from '../../src/db/stores/assembly-prefixes.js';
import { EVENT_COLUMNS, EVENT_INSERT_COLUMNS, WRAPPER_INSERT_COLUMNS } from '../../src/db/stores/events.js';
import { MESSAGE_COLUMNS } from '../../src/db/stores/messages.js';
import { forkInsert, type NewFork } from '../../src/db/stores/sessions.js';
import { SESSION_COLUMNS } from '../../src/db/stores/session-columns.js';
import { TRANSFORM_COLUMNS, TRANSFORM_INSERT_COLUMNS } from '../../src/db/stores/transforms.js';
import { TURN_AGENT_INSERT, TURN_INSERT } from '../../src/db/stores/turns.js';
import { USAGE_EVENT_INSERT, USAGE_REPORT_INSERT } from '../../src/db/stores/usage-reports.js';
import { backend, type TestApp, useTestApp } from '../helpers/app.js';

// The stores' hand-written statements name every column of the tables they write (tsc checks them
// against the generated Prisma types); this checks the same lists against the migrated database,
// so a column added by a migration without a matching store change fails here too.

let app: TestApp;
useTestApp((built) => {
  app = built;
});

const fork: NewFork = {
  id: 'f',
  workspaceId: 'w',
  title: 't',
  settings: {},
  metadata: {},
  parentId: 'p',
  rootId: 'r',
  ancestorIds: ['p'],
  depth: 1,
  forkIndex: 0,
  forkPointMessageId: 'm',
  lineage: [],
  messageCount: 0,
  createdAt: new Date(),
};

/** What each hand-written write or whole-row read covers, by table. */
const statements: { name: string; table: string; columns: string[] }[] = [
  { name: 'fork INSERT', table: 'Session', columns: Object.keys(forkInsert(fork, new SqlParams()).values) },
  { name: 'Session row decoder', table: 'Session', columns: Object.keys(SESSION_COLUMNS) },
  { name: 'Workspace row decoder', table: 'Workspace', columns: Object.keys(WORKSPACE_COLUMNS) },
  { name: 'ApiKey row decoder', table: 'ApiKey', columns: Object.keys(API_KEY_COLUMNS) },
  { name: 'ShareLink row decoder', table: 'ShareLink', columns: Object.keys(SHARE_LINK_COLUMNS) },
  { name: 'appendMessages Message INSERT', table: 'Message', columns: APPEND_INSERT_COLUMNS.Message },
  { name: 'appendMessages event INSERT', table: 'SessionEvent', columns: APPEND_INSERT_COLUMNS.SessionEvent },
  { name: 'updateMessage(appendText) event INSERT', table: 'SessionEvent', columns: STREAM_EVENT_INSERT_COLUMNS },
  { name: 'Message row decoder', table: 'Message', columns: Object.keys(MESSAGE_COLUMNS) },
  { name: 'event log INSERT', table: 'SessionEvent', columns: EVENT_INSERT_COLUMNS },
  { name: 'event log reads', table: 'SessionEvent', columns: Object.keys(EVENT_COLUMNS) },
  { name: 'sub-session wrapper INSERT', table: 'SessionEvent', columns: WRAPPER_INSERT_COLUMNS },
  { name: 'startTurn Turn INSERT', table: TURN_INSERT.table, columns: Object.keys(TURN_INSERT.values) },
  { name: 'startTurn TurnAgent INSERT', table: TURN_AGENT_INSERT.table, columns: Object.keys(TURN_AGENT_INSERT.values) },
  { name: 'reportUsage TurnUsageReport INSERT', table: USAGE_REPORT_INSERT.table, columns: Object.keys(USAGE_REPORT_INSERT.values) },
  { name: 'reportUsage event INSERT', table: USAGE_EVENT_INSERT.table, columns: Object.keys(USAGE_EVENT_INSERT.values) },
  { name: 'transform INSERT', table: 'MessageTransform', columns: TRANSFORM_INSERT_COLUMNS },
  { name: 'transform reads', table: 'MessageTransform', columns: Object.keys(TRANSFORM_COLUMNS) },
  { name: 'assembly prefix upsert', table: ASSEMBLY_PREFIX_INSERT.table, columns: Object.keys(ASSEMBLY_PREFIX_INSERT.values) },
];

/**
 * The table's columns: those a store must write or decode, and generated ones, which it need not
 * handle (Message.searchVector) but may name (Message.contentBytes: decoded, left DEFAULT in an INSERT).
 */
async function tableColumns(sql: SqlClient, table: string): Promise<{ required: string[]; all: string[] }> {
  const rows = await sql.query<{ column_name: string; is_generated: string }>(
    'SELECT column_name, is_generated FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1',
    [table],
  );
  return {
    required: rows.filter((r) => r.is_generated === 'NEVER').map((r) => r.column_name),
    all: rows.map((r) => r.column_name),
  };
}

/** Columns of the table that the statement does not handle, and columns it names that do not exist. */
async function mismatches(sql: SqlClient, statement: { table: string; columns: string[] }) {
  const actual = await tableColumns(sql, statement.table);
  return {
    unhandled: actual.required.filter((c) => !statement.columns.includes(c)),
    unknown: statement.columns.filter((c) => !actual.all.includes(c)),
  };
}

describe(`store column lists match the migrated tables (${backend.label})`, () => {
  for (const statement of statements) {
    it(`${statement.name} handles every column of "${statement.table}"`, async () => {
      expect(await mismatches(app.runtime.db.sql, statement)).toEqual({ unhandled: [], unknown: [] });
    });
  }

  it('reports a column added to a table that a store does not handle', async () => {
    const rollback = new Error('rollback');
    const added: Record<string, string> = {
      Session: 'pinned',
      Message: 'editedAt',
      SessionEvent: 'origin',
      Turn: 'label',
      TurnAgent: 'role',
      TurnUsageReport: 'region',
      MessageTransform: 'note',
      Workspace: 'plan',
      ApiKey: 'label',
      ShareLink: 'label',
      AssemblyPrefix: 'model',
    };
    await expect(
      app.runtime.db.sql.transaction(async (sql) => {
        for (const [table, column] of Object.entries(added)) await sql.query(`ALTER TABLE "${table}" ADD COLUMN "${column}" text`);
        for (const statement of statements) {
          expect((await mismatches(sql, statement)).unhandled, statement.name).toEqual([added[statement.table]]);
        }
        throw rollback;
      }),
    ).rejects.toBe(rollback);
    expect(await tableColumns(app.runtime.db.sql, 'Session')).not.toContain('pinned');
  });
});
