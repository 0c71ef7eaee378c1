// The explorer's only way to the server: the public GraphQL endpoint of the origin that served the
// page, over HTTP for queries and mutations and over graphql-ws for the live session stream.
import { type Client, createClient } from 'graphql-ws';
import type { TypedDocumentString } from '../generated/graphql.js';

const ENDPOINT = '/graphql';
const KEY_ITEM = 'session-graph.apiKey';
const SHARE_ITEM = 'session-graph.sharedSession';

/** The API key pasted in this tab: kept in sessionStorage only, so it ends with the tab. */
export const apiKey = {
  get: () => sessionStorage.getItem(KEY_ITEM) ?? '',
  set(key: string) {
    if (key) sessionStorage.setItem(KEY_ITEM, key);
    else sessionStorage.removeItem(KEY_ITEM);
    resetLive();
  },
};

/**
 * A share link's read-only view: the link's URL carries `#share=<token>&session=<id>`; the token is
 * kept as the tab's key (and taken out of the address bar), the session as the only one shown.
 */
export const shared = {
  sessionId: () => sessionStorage.getItem(SHARE_ITEM),
  /** Takes a share fragment from the address, if there is one; true when it did. */
  take(): boolean {
    if (!location.hash.startsWith('#share=')) return false;
    const params = new URLSearchParams(location.hash.slice(1));
    const token = params.get('share') ?? '';
    const session = params.get('session') ?? '';
    if (!token || !session) return false;
    sessionStorage.setItem(SHARE_ITEM, session);
    apiKey.set(token);
    history.replaceState(null, '', `${location.pathname}#/session/${encodeURIComponent(session)}`);
    return true;
  },
  leave() {
    sessionStorage.removeItem(SHARE_ITEM);
    apiKey.set('');
  },
};

/** A GraphQL error answer, with the first error's `extensions.code`. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
  }
}

const authorization = (): Record<string, string> => (apiKey.get() ? { authorization: `Bearer ${apiKey.get()}` } : {});

/** Runs a query or mutation; throws ApiError on any GraphQL error. */
export async function request<R, V>(document: TypedDocumentString<R, V>, variables: V): Promise<R> {
  const response = await fetch(ENDPOINT, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json', ...authorization() },
    body: JSON.stringify({ query: document.toString(), variables }),
  });
  const body = (await response.json()) as { data?: R; errors?: { message: string; extensions?: { code?: string } }[] };
  if (body.errors?.length) throw new ApiError(body.errors.map((e) => e.message).join('\n'), body.errors[0].extensions?.code);
  return body.data as R;
}

/** The bytes at a server path (`Attachment.url`) as an object URL, read with the tab's key (an <img> cannot send one). */
export async function objectUrl(path: string): Promise<string> {
  const response = await fetch(path, { headers: authorization() });
  if (!response.ok) throw new ApiError(`${response.status} ${response.statusText}`, undefined);
  return URL.createObjectURL(await response.blob());
}

let client: Client | null = null;

function live(): Client {
  const url = new URL(ENDPOINT, location.href);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  client ??= createClient({
    url: url.href,
    connectionParams: () => authorization(),
    lazy: true,
    retryAttempts: Number.POSITIVE_INFINITY,
    shouldRetry: () => true,
    // A person is watching: try again after about 0.5 s, then back off up to 10 s.
    retryWait: (retries) => new Promise((resolve) => setTimeout(resolve, Math.min(10_000, 500 * 2 ** retries) + Math.random() * 500)),
  });
  return client;
}

function resetLive() {
  void client?.dispose();
  client = null;
}

/**
 * Follows a stream whose events carry `sequence` (sessionEvents, turnEvents): each event is handed
 * to `onEvent` exactly once, in order. After a reconnect the client subscribes again with
 * `afterSequence` set to the last event seen, so the server replays what was missed; an event
 * already seen is dropped in case the stream repeats one. Returns a function that stops following.
 */
export function follow<R, V extends { afterSequence?: number | null }>(
  document: TypedDocumentString<R, V>,
  variables: V,
  sequenceOf: (data: R) => number,
  onEvent: (data: R) => void,
  onError: (error: unknown) => void,
  onConnected: () => void,
): () => void {
  let last = variables.afterSequence ?? -1;
  const stopListening = live().on('connected', onConnected);
  // graphql-ws sends this payload again on every reconnect: its afterSequence moves with `last`.
  const payload = { query: document.toString(), variables: { ...variables } };
  const unsubscribe = live().subscribe<R>(payload, {
    next(result) {
      if (result.errors?.length) return onError(new ApiError(result.errors.map((e) => e.message).join('\n'), undefined));
      const data = result.data as R;
      const sequence = sequenceOf(data);
      if (sequence <= last) return;
      last = sequence;
      payload.variables.afterSequence = sequence;
      onEvent(data);
    },
    error: onError,
    complete: () => {},
  });
  return () => {
    stopListening();
    unsubscribe();
  };
}
