import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  DEFAULT_CACHE_CONFIG,
  DEFAULT_HEAP_GROWING_PERCENT,
  DEFAULT_PGLITE_SHARED_BUFFERS_MB,
  loadConfig,
} from '../../src/config.js';
import { applyHeapSettings } from '../../src/process/heap-settings.js';

describe('configuration from the environment', () => {
  it('defaults to the embedded database in ./.data, in-memory pub/sub, port 4000', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({ port: 4000, host: '0.0.0.0', databaseUrl: null, redisUrl: null, logLevel: 'info', apiKeys: [] });
    expect(config.dataDir).toMatch(/\/\.data$/);
  });

  it('reads every variable', () => {
    const config = loadConfig({
      PORT: '8080',
      HOST: '127.0.0.1',
      DATA_DIR: 'memory://',
      DATABASE_URL: 'postgres://root@127.0.0.1:5432/test',
      REDIS_URL: 'redis://127.0.0.1:6379',
      LOG_LEVEL: 'WARN',
      API_KEYS: 'team-a:0123456789abcdef0123,team-b:fedcba9876543210fedc',
    });
    expect(config).toMatchObject({
      port: 8080,
      host: '127.0.0.1',
      dataDir: 'memory://',
      databaseUrl: 'postgres://root@127.0.0.1:5432/test',
      redisUrl: 'redis://127.0.0.1:6379',
      logLevel: 'warn',
      apiKeys: [
        { workspace: 'team-a', key: '0123456789abcdef0123' },
        { workspace: 'team-b', key: 'fedcba9876543210fedc' },
      ],
    });
  });

  it('keys optional, GraphiQL on and generous limits outside production; keys required and GraphiQL off in production', () => {
    expect(loadConfig({})).toMatchObject({
      authRequired: null,
      graphiql: true,
      corsOrigins: [],
      rateLimit: { requests: 3_000, windowMs: 60_000 },
      shutdownGraceMs: 10_000,
      timeouts: { headersMs: 10_000, requestMs: 30_000, keepAliveMs: 5_000, idleMs: 60_000 },
      readyTimeoutMs: 500,
    });
    expect(loadConfig({ NODE_ENV: 'production' })).toMatchObject({ authRequired: true, graphiql: false });
    expect(loadConfig({ NODE_ENV: 'production', AUTH_REQUIRED: 'false', GRAPHIQL: 'true' })).toMatchObject({
      authRequired: false,
      graphiql: true,
    });
  });

  it('reads the hardening variables', () => {
    expect(
      loadConfig({
        AUTH_REQUIRED: 'true',
        CORS_ORIGINS: 'https://app.example.com, http://localhost:5173/',
        RATE_LIMIT: '0',
        RATE_LIMIT_WINDOW_MS: '1000',
        GRAPHIQL: 'off',
        SHUTDOWN_GRACE_MS: '2500',
        HEADERS_TIMEOUT_MS: '2000',
        REQUEST_TIMEOUT_MS: '4000',
        KEEP_ALIVE_TIMEOUT_MS: '3000',
        IDLE_TIMEOUT_MS: '0',
        READY_TIMEOUT_MS: '200',
      }),
    ).toMatchObject({
      authRequired: true,
      corsOrigins: ['https://app.example.com', 'http://localhost:5173'],
      rateLimit: { requests: 0, windowMs: 1_000 },
      graphiql: false,
      shutdownGraceMs: 2_500,
      timeouts: { headersMs: 2_000, requestMs: 4_000, keepAliveMs: 3_000, idleMs: 0 },
      readyTimeoutMs: 200,
    });
  });

  it.each([
    ['PORT', { PORT: 'eighty' }],
    ['PORT', { PORT: '70000' }],
    ['DATABASE_URL', { DATABASE_URL: 'mysql://x@y/z' }],
    ['REDIS_URL', { REDIS_URL: 'http://localhost' }],
    ['LOG_LEVEL', { LOG_LEVEL: 'loud' }],
    ['API_KEYS', { API_KEYS: 'no-colon-here' }],
    ['API_KEYS', { API_KEYS: 'team:short' }],
    ['PARTS_CACHE_MAX_CHARS', { PARTS_CACHE_MAX_CHARS: 'lots' }],
    ['ROWS_CACHE_MAX_ROWS', { ROWS_CACHE_MAX_ROWS: '0' }],
    ['API_KEY_CACHE_TTL_MS', { API_KEY_CACHE_TTL_MS: '1.5' }],
    ['AUTH_REQUIRED', { AUTH_REQUIRED: 'maybe' }],
    ['CORS_ORIGINS', { CORS_ORIGINS: 'app.example.com' }],
    ['CORS_ORIGINS', { CORS_ORIGINS: 'https://app.example.com/path' }],
    ['RATE_LIMIT', { RATE_LIMIT: '-1' }],
    ['RATE_LIMIT_WINDOW_MS', { RATE_LIMIT_WINDOW_MS: '0' }],
    ['SHUTDOWN_GRACE_MS', { SHUTDOWN_GRACE_MS: 'soon' }],
    ['HEADERS_TIMEOUT_MS', { HEADERS_TIMEOUT_MS: '1.5' }],
    ['HEAP_GROWING_PERCENT', { HEAP_GROWING_PERCENT: '-1' }],
    ['HEAP_GROWING_PERCENT', { HEAP_GROWING_PERCENT: 'half' }],
    ['ALLOCATION_SITE_PRETENURING', { ALLOCATION_SITE_PRETENURING: 'sometimes' }],
  ])('refuses a bad %s with a message naming it', (name, env) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(name);
  });

  it('sizes the caches from the environment, with the built-in sizes as defaults', () => {
    expect(loadConfig({}).caches).toEqual(DEFAULT_CACHE_CONFIG);
    expect(DEFAULT_CACHE_CONFIG).toEqual({
      partsMaxChars: 32_000_000,
      rowsMax: 250_000,
      rowsMaxPerSession: 16_384,
      pageMaxChars: 8_000_000,
      sessionRowsMax: 10_000,
      windowHintsMax: 10_000,
      apiKeyMax: 10_000,
      apiKeyTtlMs: 5_000,
      subscriptionShapesMax: 1_000,
    });
    const caches = loadConfig({
      PARTS_CACHE_MAX_CHARS: '1_000_000',
      ROWS_CACHE_MAX_ROWS: '5000',
      ROWS_CACHE_MAX_ROWS_PER_SESSION: '100',
      PAGE_CACHE_MAX_CHARS: '20000',
      SESSION_CACHE_MAX_ROWS: '3',
      WINDOW_HINTS_MAX: '7',
      API_KEY_CACHE_MAX: '8',
      API_KEY_CACHE_TTL_MS: '1000',
      SUBSCRIPTION_SHAPES_MAX: '9',
    }).caches;
    expect(caches).toEqual({
      partsMaxChars: 1_000_000,
      rowsMax: 5000,
      rowsMaxPerSession: 100,
      pageMaxChars: 20_000,
      sessionRowsMax: 3,
      windowHintsMax: 7,
      apiKeyMax: 8,
      apiKeyTtlMs: 1000,
      subscriptionShapesMax: 9,
    });
  });

  it('bounds how far the old generation grows past the live heap: 50 % unless HEAP_GROWING_PERCENT says otherwise, 0 leaving it to V8', () => {
    expect(DEFAULT_HEAP_GROWING_PERCENT).toBe(50);
    expect(loadConfig({}).heapGrowingPercent).toBe(50);
    expect(loadConfig({ HEAP_GROWING_PERCENT: '0' }).heapGrowingPercent).toBe(0);
    expect(loadConfig({ HEAP_GROWING_PERCENT: '100' }).heapGrowingPercent).toBe(100);
    expect(loadConfig({}).allocationSitePretenuring).toBe(false);
    expect(loadConfig({ ALLOCATION_SITE_PRETENURING: 'true' }).allocationSitePretenuring).toBe(true);
    const set: string[] = [];
    expect(applyHeapSettings(loadConfig({}), (flag) => set.push(flag))).toEqual([
      '--heap-growing-percent=50',
      '--no-allocation-site-pretenuring',
    ]);
    expect(
      applyHeapSettings(loadConfig({ HEAP_GROWING_PERCENT: '0', ALLOCATION_SITE_PRETENURING: 'on' }), (flag) => set.push(flag)),
    ).toEqual([]);
    expect(set).toEqual(['--heap-growing-percent=50', '--no-allocation-site-pretenuring']);
  });

  it('scavenges in idle time unless IDLE_GC is off', () => {
    expect(loadConfig({}).idleGc).toBe(true);
    expect(loadConfig({ IDLE_GC: 'false' }).idleGc).toBe(false);
    expect(loadConfig({ IDLE_GC: 'on' }).idleGc).toBe(true);
    expect(() => loadConfig({ IDLE_GC: 'sometimes' })).toThrow(ConfigError);
  });

  it("sizes PGlite's page cache from PGLITE_SHARED_BUFFERS_MB, 32 MB by default, within 4 to 1024 MB", () => {
    expect(loadConfig({}).pgliteSharedBuffersMb).toBe(DEFAULT_PGLITE_SHARED_BUFFERS_MB);
    expect(DEFAULT_PGLITE_SHARED_BUFFERS_MB).toBe(32);
    expect(loadConfig({ PGLITE_SHARED_BUFFERS_MB: ' 128 ' }).pgliteSharedBuffersMb).toBe(128);
    for (const bad of ['3', '1025', '16MB', '1.5']) {
      expect(() => loadConfig({ PGLITE_SHARED_BUFFERS_MB: bad })).toThrow(
        new ConfigError(`PGLITE_SHARED_BUFFERS_MB must be an integer from 4 to 1024 (got "${bad}").`),
      );
    }
  });

  it('reads NODE_ENV=production as production', () => {
    expect(loadConfig({}).production).toBe(false);
    expect(loadConfig({ NODE_ENV: 'production' }).production).toBe(true);
  });

  it('hides the password of a database URL in errors', () => {
    expect(() => loadConfig({ DATABASE_URL: 'mysql://user:secret@host/db' })).toThrow(/user:\*\*\*@/);
  });

  it('reads the stale-turn timeout and sweep interval, 10 min and 30 s by default', () => {
    expect(loadConfig({})).toMatchObject({ turnTimeoutMs: 600_000, turnSweepIntervalMs: 30_000 });
    expect(loadConfig({ TURN_TIMEOUT_MS: '1500', TURN_SWEEP_INTERVAL_MS: '250' })).toMatchObject({
      turnTimeoutMs: 1500,
      turnSweepIntervalMs: 250,
    });
    for (const bad of ['0', '-5', '1.5', 'ten', '86400001']) {
      expect(() => loadConfig({ TURN_TIMEOUT_MS: bad })).toThrow(/TURN_TIMEOUT_MS must be a whole number/);
      expect(() => loadConfig({ TURN_SWEEP_INTERVAL_MS: bad })).toThrow(/TURN_SWEEP_INTERVAL_MS must be a whole number/);
    }
  });
});
