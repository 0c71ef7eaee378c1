/** Mode `append`: appends `total` messages in batches of `batch` from `clients` clients, round robin over the sessions (the memory scenario's setup). */
import type { AppendArgs } from '../args.js';
import { gql } from '../http-client.js';
import { APPEND, FILLER } from '../operations.js';
import { log } from '../output.js';
import { pool } from '../pool.js';

export async function runAppend({ url, sessionIds, total, batch, clients }: AppendArgs) {
  const calls = Math.ceil(total / batch);
  let failed = 0;
  await pool(calls, clients, async (i) => {
    const messages = Array.from({ length: batch }, (_, j) => ({ role: j % 2 ? 'ASSISTANT' : 'USER', text: `bulk ${i}.${j} ${FILLER}` }));
    try {
      await gql(url, APPEND, { input: { sessionId: sessionIds[i % sessionIds.length], messages } });
    } catch (error) {
      if (failed++ < 3) log((error as Error).message);
    }
  });
  return { appended: calls * batch, failed };
}
