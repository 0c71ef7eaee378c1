import { LRUCache } from 'lru-cache';

/**
 * Values computed for one event, keyed by (event id, what): the first caller computes, the others
 * of the same event share its result, as it is once known (a promise only while it is pending).
 * Two instances: the shared executions of subscription results (`useSubscriptionSharing`) and
 * `eventEntities`, what events point at (their session, message, fork), read once per instance per
 * event.
 *
 * Rule: an entry is what was read when the first subscriber of its event asked, and every other
 * subscriber of that event gets the same (that is the point: one event, one answer). It is kept for
 * `ttlMs` (long enough for one event's fan-out, short enough that a later replay reads the data as
 * it is then), so it is never older than that; nothing writes through it, so there is nothing to
 * `forget` by session (an event id is never reused). Bounded by entries (`maxEntries`), first
 * inserted first out (lookups do not refresh an entry: its age is its event's). A rejected
 * computation is dropped while it is still the current entry, so the next caller tries again.
 */
export class EventMemo<V> {
  private readonly entries: LRUCache<string, MemoEntry<V>>;
  /**
   * The last (event id, what) asked and its key: every subscriber of an event asks with the same
   * two strings in a row, and the key made once is hashed once.
   */
  private lastEventId = '';
  private lastWhat = '';
  private lastKey = keyOf('', '');

  constructor(maxEntries = 5_000, ttlMs = 5_000) {
    this.entries = new LRUCache<string, MemoEntry<V>>({ max: maxEntries, ttl: ttlMs });
  }

  /** The value (or its pending promise) kept for (event, what) and still within its time to live; undefined if none. */
  find(eventId: string, what: string): V | PromiseLike<V> | undefined {
    return this.entries.peek(this.keyOf(eventId, what))?.value;
  }

  get(eventId: string, what: string, compute: () => V | PromiseLike<V>): V | PromiseLike<V> {
    const key = this.keyOf(eventId, what);
    const hit = this.entries.peek(key);
    if (hit) return hit.value;
    const value = compute();
    const entry: MemoEntry<V> = { value };
    this.entries.set(key, entry);
    if (isPromiseLike(value)) {
      // A thenable's `then` (Prisma's queries run when first asked) starts it, as the caller's would.
      value.then(
        (settled) => {
          entry.value = settled;
        },
        () => {
          if (this.entries.peek(key) === entry) this.entries.delete(key);
        },
      );
    }
    return value;
  }

  private keyOf(eventId: string, what: string): string {
    if (eventId !== this.lastEventId || what !== this.lastWhat) {
      this.lastEventId = eventId;
      this.lastWhat = what;
      this.lastKey = keyOf(eventId, what);
    }
    return this.lastKey;
  }

  /** Entries within their time to live. */
  get size(): number {
    this.entries.purgeStale();
    return this.entries.size;
  }
}

/** One key per (event, what), unambiguous whatever either holds: the event id's length leads. */
const keyOf = (eventId: string, what: string) => `${eventId.length}:${eventId}${what}`;

export function isPromiseLike<V>(value: V | PromiseLike<V>): value is PromiseLike<V> {
  return typeof (value as Partial<PromiseLike<V>> | null)?.then === 'function';
}

interface MemoEntry<V> {
  /** The value, or its promise until it settles. */
  value: V | PromiseLike<V>;
}
