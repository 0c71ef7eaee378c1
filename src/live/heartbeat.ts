import type { WebSocket, WebSocketServer } from 'ws';

/** How often every socket is pinged; one that has not answered a ping this long is terminated. */
export const KEEP_ALIVE_MS = 12_000;

/** Heartbeat ticks per round: each pings its share of the sockets, so a round spreads over the keep-alive interval. */
const TICKS_PER_ROUND = 120;
/** At most this many pings per tick, so a tick holds the thread briefly; beyond 60,000 sockets a round takes longer. */
const MAX_PINGS_PER_TICK = 500;

/**
 * The `ws` heartbeat pattern (one timer for every socket, not a timer and a timeout per socket),
 * spread out: every socket is pinged once a round, a round takes the keep-alive interval, and each
 * tick pings only its share, so neither the pings nor their pongs come all at once. A socket that has not
 * answered its ping within the interval is terminated (use/ws's rule) when the heartbeat next
 * comes to it.
 */
export class Heartbeat {
  /**
   * When each socket's unanswered ping was sent (`performance.now()` in whole ms); a socket absent
   * has answered its last ping, or was never pinged.
   */
  private readonly pingedAt = new WeakMap<WebSocket, number>();
  /** A socket's `pong` (and `close`) listener: it has answered its ping. One function for every socket of this heartbeat. */
  readonly markAlive: (this: WebSocket) => void;
  private round: WebSocket[] = [];
  private next = 0;
  private perTick = 1;
  private roundStartedAt = Number.NEGATIVE_INFINITY;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly wss: WebSocketServer,
    private readonly intervalMs: number,
  ) {
    const { pingedAt } = this;
    this.markAlive = function (this: WebSocket) {
      pingedAt.delete(this);
    };
    this.timer = setInterval(() => this.tick(), Math.max(1, Math.floor(intervalMs / TICKS_PER_ROUND)));
    this.timer.unref();
  }

  private tick() {
    const now = Math.floor(performance.now());
    if (this.next >= this.round.length) {
      if (now - this.roundStartedAt < this.intervalMs) return;
      this.round = [...this.wss.clients];
      this.next = 0;
      this.roundStartedAt = now;
      this.perTick = Math.min(MAX_PINGS_PER_TICK, Math.ceil(this.round.length / TICKS_PER_ROUND));
    }
    const end = Math.min(this.round.length, this.next + this.perTick);
    for (; this.next < end; this.next++) {
      const socket = this.round[this.next];
      if (socket.readyState !== socket.OPEN) continue;
      const sent = this.pingedAt.get(socket);
      if (sent === undefined) {
        this.pingedAt.set(socket, now);
        socket.ping();
      } else if (now - sent >= this.intervalMs) {
        socket.terminate();
      }
      // Otherwise its ping is younger than the interval (sockets that left moved it up this round): next round decides.
    }
    // A finished round holds no socket until the next one starts.
    if (this.next >= this.round.length) this.round = [];
  }

  stop() {
    clearInterval(this.timer);
    this.round = [];
  }
}
