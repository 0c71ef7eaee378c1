import { parentPort } from 'node:worker_threads';
import { countTokens } from '../domain/tokens.js';

/** Counts long texts off the request thread for `token-precount.ts`: one text in, both counts out. */
parentPort!.on('message', ({ id, text }: { id: number; text: string }) => {
  parentPort!.postMessage({ id, counts: { O200K_BASE: countTokens(text, 'O200K_BASE'), CL100K_BASE: countTokens(text, 'CL100K_BASE') } });
});
