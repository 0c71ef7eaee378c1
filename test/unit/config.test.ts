import { describe, expect, it } from 'vitest';
import { CACHE_REFERENCE_MB, cacheSizes, DEFAULT_CACHE_CONFIG, defaultCacheMemoryMb } from '../../src/caches/sizes.js';
import {
  ConfigError,
  eventSweepInterval,
  DEFAULT_PGLITE_SHARED_BUFFERS_MB,
  DEFAULT_QUERY_JIT,
  loadConfig,
  RETIRED_VARIABLES,
  retiredVariablesSet,
  SETTINGS,
} from '../../src/config.js';

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
      API_KEYS: 'team-a:0123456789abcdef0123,team-b:fedcba9876543210fedc:read',
      METRICS_TOKEN: 'scrape-token',
      TRUSTED_DOCUMENTS: '/srv/persisted-documents.json',
      EVENT_RETENTION_MS: '86400000',
    });
    expect(config).toMatchObject({
      port: 8080,
      host: '127.0.0.1',
      dataDir: 'memory://',
      databaseUrl: 'postgres://root@127.0.0.1:5432/test',
      redisUrl: 'redis://127.0.0.1:6379',
      logLevel: 'warn',
      apiKeys: [
        { workspace: 'team-a', key: '0123456789abcdef0123', scope: 'FULL' },
        { workspace: 'team-b', key: 'fedcba9876543210fedc', scope: 'READ' },
      ],
      metricsToken: 'scrape-token',
      trustedDocuments: '/srv/persisted-documents.json',
      eventRetentionMs: 86_400_000,
    });
    expect(loadConfig({})).toMatchObject({ metricsToken: null, trustedDocuments: null, eventRetentionMs: null, redisClusterNodes: null });
    expect(loadConfig({ REDIS_CLUSTER_NODES: ' redis-a:7000, 10.0.0.2:7001 ' })).toMatchObject({
      redisClusterNodes: ['redis-a:7000', '10.0.0.2:7001'],
    });
    expect(eventSweepInterval(1_000)).toBe(250);
  });

  it('reads DATABASE_REPLICA_URLS as a list of postgres URLs beside DATABASE_URL, and refuses it alone or malformed', () => {
    const primary = 'postgres://root@127.0.0.1:5441/db';
    expect(loadConfig({})).toMatchObject({ databaseReplicaUrls: [], replicaMaxLagMs: 5_000 });
    expect(
      loadConfig({ DATABASE_URL: primary, DATABASE_REPLICA_URLS: ' postgres://root@a:5442/db, postgresql://root@b:5443/db ,' })
        .databaseReplicaUrls,
    ).toEqual(['postgres://root@a:5442/db', 'postgresql://root@b:5443/db']);
    expect(() => loadConfig({ DATABASE_REPLICA_URLS: 'postgres://root@a:5442/db' })).toThrow(/needs DATABASE_URL/);
    expect(() => loadConfig({ DATABASE_URL: primary, DATABASE_REPLICA_URLS: 'mysql://u:secret@a/db' })).toThrow(
      /DATABASE_REPLICA_URLS must be a postgres:\/\/ .*u:\*\*\*@/,
    );
    expect(eventSweepInterval(86_400_000)).toBe(60_000);
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
      }),
    ).toMatchObject({
      authRequired: true,
      corsOrigins: ['https://app.example.com', 'http://localhost:5173'],
      rateLimit: { requests: 0, windowMs: 1_000 },
      graphiql: false,
      shutdownGraceMs: 2_500,
      timeouts: { headersMs: 2_000, requestMs: 4_000, keepAliveMs: 3_000, idleMs: 0 },
    });
  });

  it.each([
    ['PORT', { PORT: 'eighty' }],
    ['PORT', { PORT: '70000' }],
    ['DATABASE_URL', { DATABASE_URL: 'mysql://x@y/z' }],
    ['REDIS_URL', { REDIS_URL: 'http://localhost' }],
    ['REDIS_CLUSTER_NODES', { REDIS_CLUSTER_NODES: 'redis://a:7000' }],
    ['REDIS_CLUSTER_NODES', { REDIS_CLUSTER_NODES: 'a:7000,b' }],
    ['REDIS_PREFIX', { REDIS_CLUSTER_NODES: 'a:7000', REDIS_PREFIX: '{app}:' }],
    ['LOG_LEVEL', { LOG_LEVEL: 'loud' }],
    ['API_KEYS', { API_KEYS: 'no-colon-here' }],
    ['API_KEYS', { API_KEYS: 'team:short' }],
    ['CACHE_MEMORY_MB', { CACHE_MEMORY_MB: 'lots' }],
    ['CACHE_MEMORY_MB', { CACHE_MEMORY_MB: '0' }],
    ['API_KEY_CACHE_TTL_MS', { API_KEY_CACHE_TTL_MS: '1.5' }],
    ['AUTH_REQUIRED', { AUTH_REQUIRED: 'maybe' }],
    ['CORS_ORIGINS', { CORS_ORIGINS: 'app.example.com' }],
    ['CORS_ORIGINS', { CORS_ORIGINS: 'https://app.example.com/path' }],
    ['RATE_LIMIT', { RATE_LIMIT: '-1' }],
    ['RATE_LIMIT_WINDOW_MS', { RATE_LIMIT_WINDOW_MS: '0' }],
    ['SHUTDOWN_GRACE_MS', { SHUTDOWN_GRACE_MS: 'soon' }],
    ['HEADERS_TIMEOUT_MS', { HEADERS_TIMEOUT_MS: '1.5' }],
  ])('refuses a bad %s with a message naming it', (name, env) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(name);
  });

  it('sizes the caches from one memory budget, DEFAULT_CACHE_CONFIG at 128 MB, by default a quarter of the heap limit up to 128 MB', () => {
    expect(CACHE_REFERENCE_MB).toBe(128);
    expect(DEFAULT_CACHE_CONFIG).toEqual({
      partsMaxChars: 32_000_000,
      rowsMax: 250_000,
      rowsMaxPerSession: 16_384,
      pageMaxChars: 8_000_000,
      sessionRowsMax: 10_000,
      windowHintsMax: 10_000,
      firstRowsMax: 10_000,
      apiKeyMax: 10_000,
      apiKeyTtlMs: 5_000,
      subscriptionShapesMax: 1_000,
      keptReadsMaxChars: 4_000_000,
      precountMaxChars: 16_000_000,
    });
    expect(defaultCacheMemoryMb(4 * 2 ** 30)).toBe(128);
    expect(defaultCacheMemoryMb(256 * 2 ** 20)).toBe(64);
    expect(defaultCacheMemoryMb(2 ** 20)).toBe(1);
    expect(loadConfig({ CACHE_MEMORY_MB: '128' }).caches).toEqual(DEFAULT_CACHE_CONFIG);
    expect(loadConfig({}).caches).toEqual(cacheSizes(defaultCacheMemoryMb()));
    expect(loadConfig({ CACHE_MEMORY_MB: '256', API_KEY_CACHE_TTL_MS: '1000' }).caches).toEqual({
      partsMaxChars: 64_000_000,
      rowsMax: 500_000,
      rowsMaxPerSession: 32_768,
      pageMaxChars: 16_000_000,
      sessionRowsMax: 20_000,
      windowHintsMax: 20_000,
      firstRowsMax: 20_000,
      apiKeyMax: 20_000,
      apiKeyTtlMs: 1000,
      subscriptionShapesMax: 2_000,
      keptReadsMaxChars: 8_000_000,
      precountMaxChars: 32_000_000,
    });
    const tiny = cacheSizes(0.001);
    expect(Math.min(...Object.values(tiny))).toBe(1);
    expect(tiny.apiKeyTtlMs).toBe(5_000);
  });

  it("keeps the query JIT, the readiness wait and PGlite's page cache constant, and warns of the variables that set them before", () => {
    expect(DEFAULT_QUERY_JIT).toEqual({ afterUses: 2, maxFields: 64, maxDocuments: 200 });
    const retired = Object.fromEntries(RETIRED_VARIABLES.map((name) => [name, '1']));
    const config = loadConfig(retired);
    expect(config.queryJit).toEqual(DEFAULT_QUERY_JIT);
    expect(config.readyTimeoutMs).toBe(500);
    expect(config.pgliteSharedBuffersMb).toBe(DEFAULT_PGLITE_SHARED_BUFFERS_MB);
    expect(DEFAULT_PGLITE_SHARED_BUFFERS_MB).toBe(32);
    expect(retiredVariablesSet(retired)).toEqual(RETIRED_VARIABLES);
    expect(retiredVariablesSet({ PORT: '1' })).toEqual([]);
    for (const name of RETIRED_VARIABLES) expect(SETTINGS).not.toHaveProperty(name);
  });

  it('reads exactly the variables of SETTINGS', () => {
    const readNames = new Set<string>();
    const env = new Proxy({} as NodeJS.ProcessEnv, {
      get: (_target, name) => {
        if (typeof name === 'string') readNames.add(name);
        return undefined;
      },
    });
    loadConfig(env);
    loadConfig(
      new Proxy({ CACHE_MEMORY_MB: '64', MAX_STRING_CHARS: '2048' } as NodeJS.ProcessEnv, {
        get: (target, name) => {
          if (typeof name === 'string') readNames.add(name);
          return target[name as string];
        },
      }),
    );
    expect([...readNames].sort()).toEqual(Object.keys(SETTINGS).sort());
  });

  it('reads NODE_ENV=production as production', () => {
    expect(loadConfig({}).production).toBe(false);
    expect(loadConfig({ NODE_ENV: 'production' }).production).toBe(true);
  });

  it('hides the password of a database URL in errors', () => {
    expect(() => loadConfig({ DATABASE_URL: 'mysql://user:secret@host/db' })).toThrow(/user:\*\*\*@/);
  });

  it('reads the stale-turn timeout, 10 min by default, and sweeps every twentieth of it, at most every 30 s', () => {
    expect(loadConfig({})).toMatchObject({ turnTimeoutMs: 600_000, turnSweepIntervalMs: 30_000 });
    expect(loadConfig({ TURN_TIMEOUT_MS: '1500' })).toMatchObject({ turnTimeoutMs: 1500, turnSweepIntervalMs: 75 });
    expect(loadConfig({ TURN_TIMEOUT_MS: '3600000' })).toMatchObject({ turnSweepIntervalMs: 30_000 });
    expect(loadConfig({ TURN_TIMEOUT_MS: '1' })).toMatchObject({ turnSweepIntervalMs: 1 });
    for (const bad of ['0', '-5', '1.5', 'ten', '86400001']) {
      expect(() => loadConfig({ TURN_TIMEOUT_MS: bad })).toThrow(/TURN_TIMEOUT_MS must be a whole number/);
    }
  });
});
