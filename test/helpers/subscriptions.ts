import { print, type DocumentNode } from 'graphql';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';

/** Collects the payloads of one subscription and lets a test wait for a condition on them. */
export class EventCollector<T = Record<string, unknown>> {
  readonly events: T[] = [];
  readonly errors: unknown[] = [];
  completed = false;
  private waiters: (() => void)[] = [];

  push(event: T) {
    this.events.push(event);
    this.notify();
  }

  fail(error: unknown) {
    this.errors.push(error);
    this.notify();
  }

  complete() {
    this.completed = true;
    this.notify();
  }

  private notify() {
    for (const wake of this.waiters.splice(0)) wake();
  }

  /** Resolves once `predicate` holds for the collected events; rejects after `timeoutMs`. */
  async until(predicate: (events: T[]) => boolean, timeoutMs = 10_000, what = 'events'): Promise<T[]> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(this.events)) {
      if (this.errors.length) throw new Error(`subscription failed while waiting for ${what}: ${JSON.stringify(this.errors)}`);
      if (this.completed) throw new Error(`subscription ended while waiting for ${what}; got ${JSON.stringify(this.events)}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}; got ${JSON.stringify(this.events, null, 1)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.events;
  }
}

/** A lazy graphql-ws client that never retries; `headers` go on the HTTP upgrade request. */
export function wsClient(httpUrl: string, connectionParams?: Record<string, unknown>, headers?: Record<string, string>): Client {
  return createClient({
    url: httpUrl.replace(/^http/, 'ws'),
    webSocketImpl: headers
      ? class extends WebSocket {
          constructor(address: string, protocols?: string | string[]) {
            super(address, protocols, { headers });
          }
        }
      : WebSocket,
    connectionParams,
    retryAttempts: 0,
    lazy: true,
  });
}

/** An Error's message, a CloseEvent as `close CODE REASON`, GraphQL errors as they are. */
function describeWsError(error: unknown) {
  if (error instanceof Error) return error.message;
  const close = error as { code?: unknown; reason?: unknown };
  if (typeof close?.code === 'number') return `close ${close.code} ${String(close.reason ?? '')}`;
  return error;
}

/** Subscribes over graphql-ws; returns the collector and an unsubscribe function. */
export function subscribeWs<T = Record<string, unknown>>(
  client: Client,
  document: DocumentNode | string,
  variables: Record<string, unknown>,
  pick: (data: Record<string, unknown>) => T,
) {
  const collector = new EventCollector<T>();
  const unsubscribe = client.subscribe(
    { query: typeof document === 'string' ? document : print(document), variables },
    {
      next: (result) => {
        if (result.errors?.length) collector.fail(result.errors);
        else collector.push(pick(result.data as Record<string, unknown>));
      },
      error: (error) => collector.fail(describeWsError(error)),
      complete: () => collector.complete(),
    },
  );
  return { collector, unsubscribe };
}

/** Subscribes over SSE through an in-process `fetch`-like function (Yoga's `fetch`). */
export function subscribeSse<T = Record<string, unknown>>(
  fetchFn: (url: string, init: RequestInit) => Promise<Response>,
  document: DocumentNode | string,
  variables: Record<string, unknown>,
  pick: (data: Record<string, unknown>) => T,
  headers: Record<string, string> = {},
) {
  const collector = new EventCollector<T>();
  const controller = new AbortController();
  void (async () => {
    try {
      const response = await fetchFn('http://localhost/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
        body: JSON.stringify({ query: typeof document === 'string' ? document : print(document), variables }),
        signal: controller.signal,
      });
      if (!response.ok || !response.headers.get('content-type')?.includes('text/event-stream')) {
        throw new Error(
          `expected an event stream, got ${response.status} ${response.headers.get('content-type')}: ${await response.text()}`,
        );
      }
      const reader = response.body!.getReader();
      const decoder = new TextDecoder();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let split: number;
        while ((split = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, split);
          buffer = buffer.slice(split + 2);
          const data = block
            .split('\n')
            .filter((line) => line.startsWith('data:'))
            .map((line) => line.slice(5).trim())
            .join('');
          if (!data) continue;
          const result = JSON.parse(data) as { data?: Record<string, unknown>; errors?: unknown[] };
          if (result.errors?.length) collector.fail(result.errors);
          else if (result.data) collector.push(pick(result.data));
        }
      }
      collector.complete();
    } catch (error) {
      if (!controller.signal.aborted) collector.fail(String(error));
    }
  })();
  return { collector, unsubscribe: () => controller.abort() };
}
