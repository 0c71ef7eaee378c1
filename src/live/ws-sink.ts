import type { ExecutionResult } from 'graphql';
import type { WebSocket } from 'ws';

/** A subscriber's socket as far as a live result is concerned: see `webSocketSink`. */
export interface LiveSink {
  /** The operation's id (graphql-transport-ws `subscribe` id). */
  readonly id: string;
  /** False once the socket is closing or closed: results are then dropped, as graphql-ws drops them. */
  open(): boolean;
  /**
   * Sends one text message (`nextMessage`'s UTF-8 bytes), in order with everything else sent on the
   * socket; returns a promise when the socket's buffer is over its mark (it resolves once this
   * message is written).
   */
  write(message: Buffer): Promise<void> | undefined;
}

/** A socket buffering more than this makes its stream wait (a slow consumer reads the log instead of growing memory). */
const SINK_HIGH_WATER = 64 * 1024;

const TEXT_FRAME = { binary: false } as const;

/** A graphql-ws subscriber's socket as a `LiveSink`. */
export function webSocketSink(socket: WebSocket, id: string): LiveSink {
  return new WebSocketSink(socket, id);
}

/** A class so that each subscriber's sink is one small object, its methods on the prototype. */
class WebSocketSink implements LiveSink {
  constructor(
    private readonly socket: WebSocket,
    readonly id: string,
  ) {}

  open() {
    return this.socket.readyState === this.socket.OPEN;
  }

  write(message: Buffer): Promise<void> | undefined {
    const { socket } = this;
    if (socket.bufferedAmount + message.length <= SINK_HIGH_WATER) {
      socket.send(message, TEXT_FRAME);
      return undefined;
    }
    return new Promise((resolve) => socket.send(message, TEXT_FRAME, () => resolve()));
  }
}

/**
 * The `next` message of one result, serialized once for every subscriber sharing it: the result's
 * JSON, and the last message built of it (subscribers of one client library mostly share their
 * operation id).
 */
const messages = new WeakMap<ExecutionResult, { payload: string; id: string | null; message: Buffer | null }>();

/** `{"id":…,"type":"next","payload":result}`, exactly as graphql-ws writes a result without errors, as UTF-8. */
export function nextMessage(result: ExecutionResult, id: string): Buffer {
  let entry = messages.get(result);
  if (!entry) messages.set(result, (entry = { payload: JSON.stringify(result), id: null, message: null }));
  if (entry.id !== id || !entry.message) {
    entry.message = Buffer.from(`{"id":${JSON.stringify(id)},"type":"next","payload":${entry.payload}}`);
    entry.id = id;
  }
  return entry.message;
}
