import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { VACUUM_AFTER_BYTES } from '../../src/db/sql.js';
import { backend, gqlOk, rawIdOf, type TestApp, useTestApp } from '../helpers/app.js';
import { AppendMessages, CreateSession, UpdateMessage } from '../helpers/documents.js';

let app: TestApp;
useTestApp((built) => {
  app = built;
});

/** Message, its TOAST table and its indexes, in bytes. */
async function messageTableBytes(): Promise<number> {
  const [row] = await app.runtime.db.sql.query<{ bytes: string }>(`SELECT pg_total_relation_size('"Message"')::text AS bytes`);
  return Number(row.bytes);
}

describe(`the embedded database's dead row versions (${backend.label})`, () => {
  // PostgreSQL's autovacuum reclaims them; PGlite runs none (src/db/sql.ts PgliteVacuum).
  it.skipIf(backend.postgresUrl)(
    'a long streamed reply leaves its old versions reusable: the Message table stops growing',
    async () => {
      const session = (await gqlOk(app, CreateSession, { input: { title: 'streamed' } })).createSession.id;
      const appended = await gqlOk(app, AppendMessages, {
        input: { sessionId: session, messages: [{ role: 'ASSISTANT', text: '', generating: true }] },
      });
      const messageId = appended.appendMessages.messages[0].id;
      const before = await messageTableBytes();
      // Incompressible text, as a model's reply is to TOAST: 400 tokens of 250 characters, each
      // update rewriting the whole text (twice: text and parts), 40 MB rewritten in all.
      const tokens = Array.from({ length: 400 }, () => randomBytes(125).toString('hex'));
      let rewritten = 0;
      let length = 0;
      for (const token of tokens) {
        await gqlOk(app, UpdateMessage, { input: { messageId, appendText: token } });
        length += token.length;
        rewritten += 2 * length;
      }
      expect(rewritten).toBeGreaterThan(4 * VACUUM_AFTER_BYTES);
      const finished = await gqlOk(app, UpdateMessage, { input: { messageId, generating: false } });
      // Nothing lost: the whole reply, in order.
      expect(finished.updateMessage.text).toBe(tokens.join(''));
      await new Promise((resolve) => setImmediate(resolve));
      const grown = (await messageTableBytes()) - before;
      // Without the vacuums the dead versions alone are ~40 MB; with them, about one threshold's worth.
      expect(grown).toBeLessThan(3 * VACUUM_AFTER_BYTES);
      expect(rawIdOf(messageId)).toBeTruthy();
    },
    120_000,
  );
});
