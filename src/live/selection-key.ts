import type { DocumentNode, ExecutionArgs } from 'graphql';
import { LRUCache } from 'lru-cache';
import { stringInterner } from '../caches/interner.js';
import { Kind, print, visit } from 'graphql';

export interface SelectionKeyOptions<Context> {
  /** Who is asking, as far as results can differ (`SubscriptionSharingOptions.scopeOf`); null: never shared. */
  scopeOf(context: Context): string | null;
  /** Root field arguments that only choose where the stream starts (`SubscriptionSharingOptions.streamOnlyArguments`). */
  streamOnlyArguments?: Record<string, readonly string[]>;
  /** How many distinct selection texts get a short id (`config.caches.subscriptionShapesMax`). */
  maxShapes?: number;
  /** How many distinct keys are interned. */
  maxKeys?: number;
}

/**
 * What makes two subscriptions share their executions: a key of (selection, operation, variables,
 * scope), equal for subscribers whose results are equal, or null for one that must not share.
 *
 * A selection's text stands in the key as a short id from the shape table. Its rule: the same text
 * gets the same id, so documents that differ only in what the shape strips still share; at most
 * `maxShapes` texts are kept, the least recently used forgotten first, and ids are never reused,
 * so a forgotten text only costs sharing between subscribers on either side of it, never a wrong
 * result. Keys are interned: subscribers of one selection hold one string. A key longer than 4 KB
 * (large variables) is its subscriber's own.
 */
export function selectionKeys<Context>(options: SelectionKeyOptions<Context>): (args: ExecutionArgs) => string | null {
  const shapes = new WeakMap<DocumentNode, DocumentShape>();
  const streamOnly = options.streamOnlyArguments ?? {};
  const shapeIds = new LRUCache<string, string>({ max: options.maxShapes ?? 1_000 });
  let lastShapeId = 0;
  const shapeOf = (document: DocumentNode): DocumentShape => {
    let shape = shapes.get(document);
    if (shape) return shape;
    const { text, keyedVariables } = stripStreamOnlyArguments(document, streamOnly);
    let id = shapeIds.get(text);
    if (id === undefined) shapeIds.set(text, (id = `${++lastShapeId}`));
    shapes.set(document, (shape = { id, keyedVariables }));
    return shape;
  };
  const internKey = stringInterner(options.maxKeys ?? 5_000);
  return (args) => {
    const scope = options.scopeOf(args.contextValue as Context);
    if (scope === null) return null;
    const shape = shapeOf(args.document);
    // Only the variables the document declares (coercion has checked them against the schema's
    // types): anything else a client sends is ignored by the execution, so it must neither split
    // sharing nor reach the key (`canonical` recurses into whatever it is given).
    const given = args.variableValues ?? {};
    const variables: Record<string, unknown> = {};
    for (const name of shape.keyedVariables) if (given[name] !== undefined) variables[name] = given[name];
    return internKey(JSON.stringify([shape.id, args.operationName ?? null, canonical(variables), scope]));
  };
}

/** A document as far as sharing is concerned: the id of its text without stream-only arguments, and their variables. */
interface DocumentShape {
  id: string;
  /** The variables it declares, but for those of stream-only arguments. */
  keyedVariables: string[];
}

function stripStreamOnlyArguments(
  document: DocumentNode,
  streamOnly: Record<string, readonly string[]>,
): { text: string; keyedVariables: string[] } {
  const uses = new Map<string, number>();
  const declared: string[] = [];
  visit(document, {
    Variable(node) {
      uses.set(node.name.value, (uses.get(node.name.value) ?? 0) + 1);
    },
    VariableDefinition(node) {
      declared.push(node.variable.name.value);
      return false;
    },
  });
  const dropped: string[] = [];
  let depth = 0;
  const stripped = visit(document, {
    OperationDefinition: {
      enter: () => void (depth = 0),
    },
    SelectionSet: {
      enter: () => void depth++,
      leave: () => void depth--,
    },
    Field(field) {
      if (depth !== 1) return;
      const names = streamOnly[field.name.value];
      if (!names?.length) return;
      const kept = (field.arguments ?? []).filter((arg) => {
        if (!names.includes(arg.name.value)) return true;
        if (arg.value.kind !== Kind.VARIABLE) return false;
        const variable = arg.value.name.value;
        if ((uses.get(variable) ?? 0) > 1) return true;
        dropped.push(variable);
        return false;
      });
      return { ...field, arguments: kept };
    },
  });
  // The stripped variables' definitions go too, so `$after: Int` and `$after: Int = 0` share.
  const text = print(
    visit(stripped, {
      VariableDefinition: (definition) => (dropped.includes(definition.variable.name.value) ? null : undefined),
    }),
  );
  return { text, keyedVariables: declared.filter((name) => !dropped.includes(name)) };
}

/** JSON with object keys sorted, so `{a, b}` and `{b, a}` give the same key. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}
