/**
 * Mode `http`: autocannon POSTing GraphQL bodies (one per connection, cycled) for a duration.
 * Responses that are not 200 or carry `errors` count as failed, with connection errors and timeouts.
 */
import autocannon from 'autocannon';
import type { HttpArgs } from '../args.js';

export async function runHttp({ url, connections, durationS, bodies }: HttpArgs) {
  let nextConnection = 0;
  let failed = 0;
  const firstErrors: string[] = [];
  const result = await autocannon({
    url,
    connections,
    duration: durationS,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    requests: [
      {
        setupRequest: (request, context: { body?: string }) => {
          if (context.body === undefined) context.body = bodies[nextConnection++ % bodies.length];
          return { ...request, body: context.body };
        },
        onResponse: (status, body) => {
          if (status !== 200 || body.includes('"errors"')) {
            failed++;
            if (firstErrors.length < 3) firstErrors.push(`${status} ${body.slice(0, 300)}`);
          }
        },
      },
    ],
  });
  return {
    rps: result.requests.total / result.duration,
    total: result.requests.total,
    p50: result.latency.p50,
    p99: result.latency.p99,
    failed: failed + result.errors + result.timeouts,
    firstErrors,
  };
}
