/**
 * The plugin hooks the HTTP fast path (fast-path.ts) runs as Yoga would: those of envelop's `getEnveloped` (context,
 * parse, validate, execute), and those that run once at start. A subscription is never run here
 * (it is handed to Yoga), so `onSubscribe` holds too.
 */
export const FAST_PATH_HOOKS: ReadonlySet<string> = new Set([
  'onPluginInit',
  'onYogaInit',
  'onSchemaChange',
  'onEnveloped',
  'onContextBuilding',
  'onParse',
  'onValidate',
  'onExecute',
  'onSubscribe',
]);

/** Envelop's and Yoga's hooks are `on…` functions, plus `instrumentation`; other keys (a plugin's own API) are not hooks. */
const isHook = (key: string) => /^on[A-Z]/.test(key) || key === 'instrumentation';

const COVERED = Symbol('hooks the HTTP fast path covers by its own checks');

/**
 * Marks hooks of `plugin` outside FAST_PATH_HOOKS (a guard's `onRequest`) as covered: every
 * request the fast path takes already satisfies what the hook checks, with the same function
 * (see `takes` and `run` in fast-path.ts). The caller states that at the plugin's definition.
 */
export function fastPathCovers<P extends object>(plugin: P, hooks: readonly string[]): P {
  return Object.assign(plugin, { [COVERED]: hooks });
}

/**
 * Throws at start when a plugin has a hook the fast path would skip (Yoga's request hooks such as
 * `onRequest`, `onRequestParse`, `onParams`, `onResultProcess`, `onResponse`, or `instrumentation`)
 * and that hook is not marked `fastPathCovers`: a plugin added later (metrics, tracing, persisted
 * documents, a response cache) must either work on envelop's hooks or say how the fast path covers it.
 */
export function assertFastPathHonours(plugins: readonly object[]): void {
  plugins.forEach((plugin, index) => {
    const covered = (plugin as { [COVERED]?: readonly string[] })[COVERED] ?? [];
    const skipped = Object.keys(plugin).filter((key) => isHook(key) && !FAST_PATH_HOOKS.has(key) && !covered.includes(key));
    if (skipped.length === 0) return;
    throw new Error(
      `Plugin #${index} has hooks the HTTP fast path does not run (${skipped.join(', ')}); it honours only ` +
        `${[...FAST_PATH_HOOKS].join(', ')}. Move the plugin's work to those hooks, or mark the hook with ` +
        'fastPathCovers (src/http/fast-path-contract.ts) where the fast path checks the same with the same function.',
    );
  });
}
