/**
 * The load process's command line: the mode (argv[2]) and its arguments as one JSON object in
 * BENCH_LOAD_ARGS, as the scenarios pass them (`ctx.load(mode, args)`, bench/proc.ts). Parsed once,
 * into one typed object per mode; a missing or mistyped argument is a `LoadArgsError` naming its path.
 * Absent and `null` mean the same (the runner passes `null` for what a backend lacks).
 */

/** A missing or mistyped argument, or an unknown mode: the load exits with status 2 and this message. */
export class LoadArgsError extends Error {}

/** Subscribers of one session (server) or relay channel (relay), all reading from `after`. */
export interface Group {
  /** The session's global ID; the relay channel too unless `channel` is given. */
  sessionId: string;
  channel?: string;
  after: number;
  subscribers: number;
}

export interface HttpArgs {
  mode: 'http';
  url: string;
  connections: number;
  durationS: number;
  /** POST bodies, one per connection, cycled. */
  bodies: string[];
}

export interface RawWritesArgs {
  mode: 'raw-writes';
  /** JSON: `databaseUrl` (PostgreSQL) when given, else `dataDir` (a PGlite folder). */
  database: { backend: 'postgres'; url: string } | { backend: 'pglite'; dataDir: string };
  /** Session row IDs (not global IDs); client i writes to sessions[i % length]. */
  sessions: string[];
  clients: number;
  durationS: number;
}

/**
 * One side of the `fanout` mode. JSON: `target` 'server' or 'relay'; a relay side with a `writer`
 * is the durable relay, one without publishes to Redis itself.
 */
export type FanoutSide =
  | { kind: 'server'; urls: string[]; groups: Group[] }
  | { kind: 'relay'; urls: string[]; groups: Group[]; redisUrl: string; relayPrefix: string; payloadBytes: number }
  | {
      kind: 'durable-relay';
      urls: string[];
      groups: Group[];
      /** The raw baseline's POST /event, which writes `messageId`'s row and then publishes the event. */
      writer: { url: string; messageId: string };
    };

export interface FanoutArgs {
  mode: 'fanout';
  sides: FanoutSide[];
  events: number;
  intervalMs: number;
  /** How long a wait for deliveries may take before the missing ones count as lost. */
  deadlineMs: number;
}

export interface PacedArgs {
  mode: 'paced';
  url: string;
  count: number;
  intervalMs: number;
}

interface StreamTargetBase {
  /** The process under test, whose CPU per update is read from /proc. */
  pid: number;
  url: string;
  wsUrl: string;
  sessionId: string;
  after: number;
}

/** One process under test in the `stream` mode: the server's updateMessage, or the raw baseline's update + publish. */
export type StreamTarget =
  | (StreamTargetBase & { target: 'server'; messageId: string })
  | (StreamTargetBase & { target: 'raw'; rawMessageId: string; channel: string });

export interface StreamArgs {
  mode: 'stream';
  targets: StreamTarget[];
  watchers: number;
  blocks: number;
  /** Updates per block. */
  block: number;
}

export interface UsageArgs {
  mode: 'usage';
  url: string;
  sessionId: string;
  turnId: string;
  /** The session's last turn-event sequence before the burst. */
  after: number;
  clients: number;
  calls: number;
  subscribers: number;
}

export interface AppendArgs {
  mode: 'append';
  url: string;
  sessionIds: string[];
  total: number;
  batch: number;
  clients: number;
}

export interface HoldArgs {
  mode: 'hold';
  urls: string[];
  sessionId: string;
  count: number;
}

export interface SoakArgs {
  mode: 'soak';
  url: string;
  sessionIds: string[];
  readBody: string;
  durationS: number;
  readers: number;
  subscribers: number;
  writesPerSecond: number;
}

export type LoadArgs = HttpArgs | RawWritesArgs | FanoutArgs | PacedArgs | StreamArgs | UsageArgs | AppendArgs | HoldArgs | SoakArgs;
export type LoadMode = LoadArgs['mode'];

/** One JSON object of the arguments; every read names the argument's path when it fails. */
class Fields {
  private constructor(
    private readonly value: Record<string, unknown>,
    private readonly path: string,
  ) {}

  static of(value: unknown, path: string): Fields {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw mistyped(path, 'an object', value);
    return new Fields(value as Record<string, unknown>, path);
  }

  has(key: string): boolean {
    return this.value[key] !== undefined && this.value[key] !== null;
  }

  string(key: string): string {
    return this.read(key, 'a string', (value) => typeof value === 'string') as string;
  }

  optionalString(key: string): string | undefined {
    return this.has(key) ? this.string(key) : undefined;
  }

  oneOf<T extends string>(key: string, values: readonly T[]): T {
    return this.read(key, values.map((v) => `'${v}'`).join(' or '), (value) => values.includes(value as T)) as T;
  }

  integer(key: string, min: number): number {
    return this.read(key, `an integer ≥ ${min}`, (value) => Number.isInteger(value) && (value as number) >= min) as number;
  }

  positive(key: string): number {
    return this.read(key, 'a number > 0', (value) => typeof value === 'number' && Number.isFinite(value) && value > 0) as number;
  }

  optionalPositive(key: string): number | undefined {
    return this.has(key) ? this.positive(key) : undefined;
  }

  object<T>(key: string, read: (fields: Fields) => T): T {
    return read(Fields.of(this.required(key), this.at(key)));
  }

  /** A non-empty list of objects. */
  objects<T>(key: string, read: (fields: Fields) => T): T[] {
    return this.list(key).map((item, i) => read(Fields.of(item, `${this.at(key)}[${i}]`)));
  }

  /** A non-empty list of strings. */
  strings(key: string): string[] {
    const items = this.list(key);
    items.forEach((item, i) => {
      if (typeof item !== 'string') throw mistyped(`${this.at(key)}[${i}]`, 'a string', item);
    });
    return items as string[];
  }

  private list(key: string): unknown[] {
    const value = this.read(key, 'a non-empty list', (v) => Array.isArray(v) && v.length > 0);
    return value as unknown[];
  }

  private read(key: string, expected: string, accepts: (value: unknown) => boolean): unknown {
    const value = this.required(key);
    if (!accepts(value)) throw mistyped(this.at(key), expected, value);
    return value;
  }

  private required(key: string): unknown {
    if (!this.has(key)) throw new LoadArgsError(`${this.at(key)} is missing`);
    return this.value[key];
  }

  private at(key: string): string {
    return `${this.path}.${key}`;
  }
}

function mistyped(path: string, expected: string, value: unknown): LoadArgsError {
  return new LoadArgsError(`${path}: expected ${expected}, got ${String(JSON.stringify(value)).slice(0, 80)}`);
}

function group(f: Fields): Group {
  return {
    sessionId: f.string('sessionId'),
    channel: f.optionalString('channel'),
    after: f.integer('after', 0),
    subscribers: f.integer('subscribers', 0),
  };
}

function fanoutSide(f: Fields): FanoutSide {
  const urls = f.strings('urls');
  const groups = f.objects('groups', group);
  if (f.oneOf('target', ['server', 'relay'] as const) === 'server') return { kind: 'server', urls, groups };
  if (f.has('writer')) {
    const writer = f.object('writer', (w) => ({ url: w.string('url'), messageId: w.string('messageId') }));
    return { kind: 'durable-relay', urls, groups, writer };
  }
  return {
    kind: 'relay',
    urls,
    groups,
    redisUrl: f.optionalString('redisUrl') ?? 'redis://127.0.0.1:6379',
    relayPrefix: f.string('relayPrefix'),
    payloadBytes: f.has('payloadBytes') ? f.integer('payloadBytes', 0) : 300,
  };
}

function streamTarget(f: Fields): StreamTarget {
  const base = {
    pid: f.integer('pid', 1),
    url: f.string('url'),
    wsUrl: f.string('wsUrl'),
    sessionId: f.string('sessionId'),
    after: f.integer('after', 0),
  };
  return f.oneOf('target', ['server', 'raw'] as const) === 'server'
    ? { ...base, target: 'server', messageId: f.string('messageId') }
    : { ...base, target: 'raw', rawMessageId: f.string('rawMessageId'), channel: f.string('channel') };
}

function rawWritesDatabase(f: Fields): RawWritesArgs['database'] {
  const url = f.optionalString('databaseUrl');
  if (url) return { backend: 'postgres', url };
  const dataDir = f.optionalString('dataDir');
  if (dataDir) return { backend: 'pglite', dataDir };
  throw new LoadArgsError('BENCH_LOAD_ARGS needs databaseUrl (PostgreSQL) or dataDir (PGlite)');
}

const readers: { [M in LoadMode]: (f: Fields) => Extract<LoadArgs, { mode: M }> } = {
  http: (f) => ({
    mode: 'http',
    url: f.string('url'),
    connections: f.integer('connections', 1),
    durationS: f.positive('durationS'),
    bodies: f.strings('bodies'),
  }),
  'raw-writes': (f) => ({
    mode: 'raw-writes',
    database: rawWritesDatabase(f),
    sessions: f.strings('sessions'),
    clients: f.integer('clients', 1),
    durationS: f.positive('durationS'),
  }),
  fanout: (f) => ({
    mode: 'fanout',
    sides: f.objects('sides', fanoutSide),
    events: f.integer('events', 1),
    intervalMs: f.positive('intervalMs'),
    deadlineMs: f.optionalPositive('deadlineMs') ?? 60_000,
  }),
  paced: (f) => ({ mode: 'paced', url: f.string('url'), count: f.integer('count', 1), intervalMs: f.positive('intervalMs') }),
  stream: (f) => ({
    mode: 'stream',
    targets: f.objects('targets', streamTarget),
    watchers: f.integer('watchers', 1),
    blocks: f.integer('blocks', 1),
    block: f.integer('block', 1),
  }),
  usage: (f) => ({
    mode: 'usage',
    url: f.string('url'),
    sessionId: f.string('sessionId'),
    turnId: f.string('turnId'),
    after: f.integer('after', 0),
    clients: f.integer('clients', 1),
    calls: f.integer('calls', 1),
    subscribers: f.integer('subscribers', 0),
  }),
  append: (f) => ({
    mode: 'append',
    url: f.string('url'),
    sessionIds: f.strings('sessionIds'),
    total: f.integer('total', 1),
    batch: f.integer('batch', 1),
    clients: f.integer('clients', 1),
  }),
  hold: (f) => ({ mode: 'hold', urls: f.strings('urls'), sessionId: f.string('sessionId'), count: f.integer('count', 0) }),
  soak: (f) => ({
    mode: 'soak',
    url: f.string('url'),
    sessionIds: f.strings('sessionIds'),
    readBody: f.string('readBody'),
    durationS: f.positive('durationS'),
    readers: f.integer('readers', 0),
    subscribers: f.integer('subscribers', 0),
    writesPerSecond: f.positive('writesPerSecond'),
  }),
};

const MODES = Object.keys(readers) as LoadMode[];

/** The mode's typed arguments; throws a `LoadArgsError` for an unknown mode or a missing or bad argument. */
export function parseLoadArgs(mode: string | undefined, json: string | undefined): LoadArgs {
  if (!MODES.includes(mode as LoadMode)) throw new LoadArgsError(`unknown mode ${mode}; known: ${MODES.join(', ')}`);
  let value: unknown;
  try {
    value = JSON.parse(json ?? '{}');
  } catch (error) {
    throw new LoadArgsError(`${mode}: BENCH_LOAD_ARGS is not JSON: ${(error as Error).message}`);
  }
  try {
    return readers[mode as LoadMode](Fields.of(value, 'BENCH_LOAD_ARGS'));
  } catch (error) {
    if (error instanceof LoadArgsError) error.message = `${mode}: ${error.message}`;
    throw error;
  }
}
