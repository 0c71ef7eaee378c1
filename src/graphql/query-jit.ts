/**
 * Queries and mutations that clients send again and again run as compiled JavaScript (graphql-jit)
 * instead of graphql-js's interpreter (compiled mutations run their root fields one after the
 * other, as graphql-js does). Compiling costs time and memory per document, growing with its size,
 * so it is spent only where it pays, and bounded:
 *
 * - only a document's `afterUses`-th execution compiles it (one-off documents never are);
 * - only documents of one query or mutation operation of at most `maxFields` fields (fragments
 *   expanded, as the query limits count them);
 * - at most `maxDocuments` compiled documents are kept (least recently used first out), and at most
 *   COMPILE_BUDGET compilations run per window, so a client cycling through documents cannot turn
 *   compiling into a cost it chooses;
 * - a document that is not compiled runs on graphql-js.
 *
 * A subscription's events are executed by `eventExecutor` the same way: a subscription document
 * compiles at its `afterUses`-th event execution (each event is executed once for all the
 * subscribers that share it, see src/live/sharing.ts), under the same bounds and budget.
 *
 * Use counts are kept per DocumentNode (weakly): Yoga's parse cache hands out the same node for the
 * same text and bounds how many there are. Results and errors are the same as graphql-js's
 * (`TEST_DEVIATIONS=off` runs the suite with this off, on graphql-js alone; query-jit.test.ts compares both).
 *
 * graphql-jit itself is loaded by `load()` (the app calls it once it listens), off the start. Until
 * it is loaded, documents run on graphql-js and stay undecided, compiled at a later use.
 */
import type { ASTNode, DocumentNode, ExecutionArgs, ExecutionResult, OperationDefinitionNode } from 'graphql';
import type { CompiledQuery } from 'graphql-jit';
import type { Plugin } from 'graphql-yoga';
import { LRUCache } from 'lru-cache';
import { operationFields } from './query-limits.js';
import { GraphQLError, Kind, visit } from 'graphql';
import type { QueryJitOptions } from '../config.js';

export const COMPILE_BUDGET = { compiles: 20, windowMs: 10_000 };

interface Entry {
  uses: number;
  /** undefined: not decided (or compiled and since evicted); null: runs on graphql-js. */
  compiled?: CompiledQuery | null;
  /** The operation's name (a request naming another operation runs on graphql-js, which refuses it). */
  name?: string;
  /** The document's nodes by where they start (`line:column`), made at the first error. */
  nodes?: Map<string, ASTNode>;
}

/**
 * graphql-jit's errors carry their locations but not their nodes, and Yoga rebuilds every error
 * from its nodes before sending it: the same errors with their nodes, as graphql-js gives them.
 */
function withNodes(entry: Entry, document: DocumentNode, result: ExecutionResult): ExecutionResult {
  if (!result.errors?.length) return result;
  if (!entry.nodes) {
    const nodes = new Map<string, ASTNode>();
    visit(document, {
      enter(node) {
        const start = node.loc?.startToken;
        if (start && !nodes.has(`${start.line}:${start.column}`)) nodes.set(`${start.line}:${start.column}`, node);
      },
    });
    entry.nodes = nodes;
  }
  const nodes = entry.nodes;
  return {
    ...result,
    errors: result.errors.map((error) => {
      if (error.nodes?.length || !error.locations?.length) return error;
      const found = error.locations.map(({ line, column }) => nodes.get(`${line}:${column}`)).filter((n) => n !== undefined);
      return new GraphQLError(error.message, {
        nodes: found,
        path: error.path,
        originalError: error.originalError,
        extensions: error.extensions,
      });
    }),
  };
}

/**
 * The single operation of `document` if it is of `kind` (`request`: a query or a mutation), or null
 * (another kind, several operations).
 */
function singleOperation(document: DocumentNode, kind: 'request' | 'subscription'): OperationDefinitionNode | null {
  let found: OperationDefinitionNode | null = null;
  for (const def of document.definitions) {
    if (def.kind !== Kind.OPERATION_DEFINITION) continue;
    if (found || (def.operation === 'subscription') !== (kind === 'subscription')) return null;
    found = def;
  }
  return found;
}

/** One event's execution of a subscription document: its payload for `rootValue` (the event). */
export type EventExecution = (rootValue: unknown, contextValue: unknown) => ExecutionResult | Promise<ExecutionResult>;

/** Executions so far, compiled and on graphql-js's interpreter, and the compilations run. */
export interface QueryJitStats {
  compiled: number;
  interpreted: number;
  compilations: number;
}

export function useQueryJit(options: QueryJitOptions): Plugin & {
  stats: QueryJitStats;
  load(): Promise<void>;
  /**
   * The compiled execution of a subscription's events (`args`: the subscription's own, its raw
   * variables), once the document has been executed `afterUses` times; null: execute on graphql-js.
   */
  eventExecutor(args: ExecutionArgs): EventExecution | null;
} {
  const stats: QueryJitStats = { compiled: 0, interpreted: 0, compilations: 0 };
  let jit: typeof import('graphql-jit') | null = null;
  let loading: Promise<void> | null = null;
  // A compiler that cannot be loaded leaves every document on graphql-js.
  const load = () =>
    (loading ??= import('graphql-jit').then(
      (module) => {
        jit = module;
      },
      () => {},
    ));
  const entries = new WeakMap<DocumentNode, Entry>();
  // The entries holding a compiled query: at most `maxDocuments`, the least recently used out
  // first. An evicted entry drops its compiled query (and its nodes) and stays undecided, so a later
  // use compiles it again. Never stale: a compiled query depends only on the schema and the document.
  const kept = new LRUCache<DocumentNode, Entry>({
    max: Math.max(1, options.maxDocuments),
    dispose: (old) => {
      old.compiled = undefined;
      old.nodes = undefined;
    },
  });
  const budget = options.budget ?? COMPILE_BUDGET;
  let windowStart = Number.NEGATIVE_INFINITY;
  let spent = 0;

  const decide = (entry: Entry, args: ExecutionArgs, kind: 'request' | 'subscription'): void => {
    const operation = singleOperation(args.document, kind);
    if (!operation || operationFields(args.document) > options.maxFields || options.maxDocuments <= 0) {
      entry.compiled = null;
      return;
    }
    const now = performance.now();
    if (now - windowStart > budget.windowMs) {
      windowStart = now;
      spent = 0;
    }
    // Not loaded yet, or over budget: undecided still, tried again at a later use.
    if (!jit) return void load();
    if (spent >= budget.compiles) return;
    spent++;
    stats.compilations++;
    const compiled = jit.compileQuery(args.schema, args.document, operation.name?.value);
    if (!jit.isCompiledQuery(compiled)) {
      entry.compiled = null;
      return;
    }
    entry.compiled = compiled;
    entry.name = operation.name?.value;
    kept.set(args.document, entry);
  };

  /** The compiled query for `args` (decided at the use the options say), counted; null: graphql-js runs it. */
  const compiledFor = (args: ExecutionArgs, kind: 'request' | 'subscription'): { entry: Entry; query: CompiledQuery } | null => {
    stats.interpreted++;
    if (options.afterUses <= 0) return null;
    let entry = entries.get(args.document);
    if (!entry) entries.set(args.document, (entry = { uses: 0 }));
    if (entry.compiled === undefined && ++entry.uses >= options.afterUses) decide(entry, args, kind);
    const compiled = entry.compiled;
    if (!compiled || (args.operationName != null && args.operationName !== entry.name)) return null;
    // Used now: last to be evicted.
    kept.get(args.document);
    stats.interpreted--;
    stats.compiled++;
    return { entry, query: compiled };
  };

  return {
    stats,
    load,
    onExecute({ args, setExecuteFn }) {
      const compiled = compiledFor(args, 'request');
      if (!compiled) return;
      const done = (result: ExecutionResult) => withNodes(compiled.entry, args.document, result);
      setExecuteFn((run: ExecutionArgs) => {
        const result = compiled.query.query(run.rootValue, run.contextValue, run.variableValues);
        return result instanceof Promise ? result.then(done) : done(result);
      });
    },
    eventExecutor(args) {
      const compiled = compiledFor(args, 'subscription');
      if (!compiled) return null;
      const done = (result: ExecutionResult) => withNodes(compiled.entry, args.document, result);
      return (rootValue, contextValue) => {
        const result = compiled.query.query(rootValue, contextValue, args.variableValues);
        return result instanceof Promise ? result.then(done) : done(result);
      };
    },
  };
}
