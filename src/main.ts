// Entry point: reads the environment, builds the app, listens, and shuts down cleanly on signals.
import { buildApp } from './app.js';
import { type AppConfig, ConfigError, loadConfig } from './config.js';
import { applyHeapSettings } from './process/heap-settings.js';
import { startIdleGc } from './process/idle-gc.js';

let config: AppConfig;
try {
  config = loadConfig();
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(`session-graph: configuration error: ${error.message}`);
    process.exit(2);
  }
  throw error;
}

// Process-wide, so here and not in buildApp (which touches no process globals).
applyHeapSettings(config);
const idleGc = config.idleGc ? startIdleGc() : null;
const app = await buildApp(config);
const { db, bus, auth, logger } = app.runtime;
const authMode =
  config.authRequired === true
    ? 'API keys required'
    : config.authRequired === false
      ? 'API keys optional (requests without one use the default workspace)'
      : (await auth.keysRequired())
        ? 'API keys required (keys exist)'
        : 'no API keys yet, one default workspace';
const url = await app.listen();
console.log(`session-graph listening on ${url} (${config.graphiql ? 'GraphiQL in a browser; ' : ''}WebSocket and SSE subscriptions)`);
console.log(`storage: ${db.description}; pub/sub: ${bus.description}; auth: ${authMode}`);

let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, async () => {
    if (stopping) {
      // A second signal: the operator does not want to wait for the grace period.
      logger.warn('second signal, exiting now', { signal });
      process.exit(1);
    }
    stopping = true;
    logger.info('shutting down', { signal, graceMs: config.shutdownGraceMs });
    try {
      idleGc?.stop();
      await app.close();
      process.exit(0);
    } catch (error) {
      logger.error('shutdown failed', { error });
      process.exit(1);
    }
  });
}
