import {
  Kind,
  type ASTVisitor,
  type FragmentDefinitionNode,
  type SelectionSetNode,
  type ValidationContext,
  type ValidationRule,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { DomainError, toGraphQLError } from './errors.js';

export interface QueryLimits {
  /** Deepest nesting of fields, fragments expanded (introspection fields not counted). */
  maxDepth: number;
  /** Aliased fields in one document. */
  maxAliases: number;
  /** Fields selected in one document, fragments expanded once per use. */
  maxFields: number;
}

export const DEFAULT_QUERY_LIMITS: QueryLimits = { maxDepth: 14, maxAliases: 30, maxFields: 2_000 };

/**
 * Refuses documents that are too deep, too wide or too aliased before they execute, with
 * QUERY_TOO_COMPLEX: a nested session graph is cheap per level, but unbounded nesting is not.
 */
export function queryLimitsRule(limits: QueryLimits): ValidationRule {
  return (context: ValidationContext): ASTVisitor => {
    const fragments = new Map<string, FragmentDefinitionNode>();
    for (const def of context.getDocument().definitions) {
      if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);
    }
    let fields = 0;
    let aliases = 0;
    const measure = (set: SelectionSetNode, depth: number, seen: Set<string>): number => {
      let deepest = depth;
      for (const selection of set.selections) {
        if (selection.kind === Kind.FIELD) {
          // Introspection is bounded by the schema itself (GraphiQL's query nests type refs 8 deep).
          if (selection.name.value.startsWith('__')) continue;
          fields++;
          if (selection.alias) aliases++;
          if (selection.selectionSet) deepest = Math.max(deepest, measure(selection.selectionSet, depth + 1, seen));
        } else if (selection.kind === Kind.INLINE_FRAGMENT) {
          deepest = Math.max(deepest, measure(selection.selectionSet, depth, seen));
        } else {
          const fragment = fragments.get(selection.name.value);
          if (!fragment || seen.has(fragment.name.value)) continue;
          deepest = Math.max(deepest, measure(fragment.selectionSet, depth, new Set(seen).add(fragment.name.value)));
        }
      }
      return deepest;
    };
    return {
      OperationDefinition(node) {
        const depth = measure(node.selectionSet, 1, new Set());
        const problem =
          depth > limits.maxDepth
            ? `is ${depth} levels deep (at most ${limits.maxDepth})`
            : aliases > limits.maxAliases
              ? `has ${aliases} aliases (at most ${limits.maxAliases})`
              : fields > limits.maxFields
                ? `selects ${fields} fields (at most ${limits.maxFields})`
                : null;
        if (problem) {
          context.reportError(toGraphQLError(new DomainError('QUERY_TOO_COMPLEX', `This operation ${problem}; split it into smaller ones.`)));
        }
      },
    };
  };
}

export function useQueryLimits(limits: QueryLimits = DEFAULT_QUERY_LIMITS): Plugin {
  const rule = queryLimitsRule(limits);
  return {
    onValidate({ addValidationRule }) {
      addValidationRule(rule);
    },
  };
}
