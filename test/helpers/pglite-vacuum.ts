import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { VACUUM_AFTER_BYTES } from '../../src/db/sql.js';
import { backend, gqlOk, type TestApp, useTestApp } from './app.js';
import { AppendMessages, CreateSession, UpdateMessage } from './documents.js';

/** A streaming client's update: it asks for nothing back (the whole message and its token count would be the bulk of the work). */
const STREAMED_UPDATE = 'mutation ($input: UpdateMessageInput!) { updateMessage(input: $input) { id } }';

/**
 * The test of the embedded database's dead row versions for one way a message is rewritten, in a
 * file of its own per way (pglite-vacuum-*.test.ts): each takes tens of seconds, and apart they
 * run on both workers.
 */
export function describeStreamedRewrites(way: 'appendText' | 'parts') {
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
    // PostgreSQL's autovacuum reclaims them; PGlite runs none (src/db/sql.ts PgliteVacuum). Both ways
    // a message is rewritten count: the one-statement appendText, and the transaction that replaces
    // its parts (which sub-agent sessions' appendText takes too).
    it.skipIf(backend.postgresUrl)(
      `a long reply streamed by ${way} leaves its old versions reusable: the Message table stops growing`,
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
        let text = '';
        for (const token of tokens) {
          text += token;
          const input = way === 'appendText' ? { messageId, appendText: token } : { messageId, parts: [{ text: { text } }] };
          await gqlOk(app, STREAMED_UPDATE, { input });
          rewritten += 2 * text.length;
        }
        expect(rewritten).toBeGreaterThan(4 * VACUUM_AFTER_BYTES);
        const finished = await gqlOk(app, UpdateMessage, { input: { messageId, generating: false } });
        // Nothing lost: the whole reply, in order.
        expect(finished.updateMessage.text).toBe(tokens.join(''));
        const grown = (await messageTableBytes()) - before;
        // Without the vacuums the dead versions alone are ~40 MB; with them, about one threshold's worth.
        expect(grown).toBeLessThan(3 * VACUUM_AFTER_BYTES);
      },
      120_000,
    );
  });
}
