// What `main.ts` runs: reads the environment, builds the app, listens, and shuts down cleanly on signals.
// Exit codes: 0 after a clean shutdown, 1 when shutdown fails or a second signal cuts it short,
// 2 on a configuration error (its message names the variable).
import { buildApp, type Deviations } from './app.js';
import { type AppConfig, ConfigError, loadConfig, retiredVariablesSet } from './config.js';
import { startTracing, tracingWanted } from './graphql/tracing.js';

export interface StartOptions {
  /**
   * Deviations turned off (`BuildAppOptions.deviations`). `main.ts` passes none: a deployment runs
   * with every deviation on, and no setting turns one off. Only the benchmark's entry
   * (bench/servers/obvious.mjs, `npm run bench -- --deviations=off`) passes them, to measure the
   * server without them.
   */
  deviations?: Partial<Deviations>;
}

/** Starts the server as `npm start` runs it; the process then lives until a signal stops it. */
export async function start(options: StartOptions = {}): Promise<void> {
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

  for (const name of retiredVariablesSet()) {
    console.warn(`session-graph: ${name} is no longer read (a constant, or derived from the documented settings); ignoring it`);
  }
  // OpenTelemetry's own variables turn traces on; without them nothing of it is loaded.
  const tracing = tracingWanted(process.env) ? await startTracing() : undefined;
  let app: Awaited<ReturnType<typeof buildApp>>;
  try {
    app = await buildApp(config, { tracing, deviations: options.deviations });
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`session-graph: configuration error: ${error.message}`);
      process.exit(2);
    }
    throw error;
  }
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
        await app.close();
        process.exit(0);
      } catch (error) {
        logger.error('shutdown failed', { error });
        process.exit(1);
      }
    });
  }
}
