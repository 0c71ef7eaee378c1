import type { Plugin } from 'graphql-yoga';
import type { KeyScope } from '../config.js';
import { type FragmentDefinitionNode, getOperationAST } from 'graphql';
import { assertShareOperation } from '../schema/share-scope.js';
import { DomainError, toGraphQLError } from './errors.js';

/**
 * A READ key runs queries and subscriptions; a mutation gets FORBIDDEN, naming the scope, before
 * any resolver runs. On envelop's `onExecute`, so it holds wherever an operation executes: Yoga's
 * HTTP and SSE path, the HTTP fast path and graphql-ws (whose queries and mutations execute through
 * envelop). Subscriptions never write, so they are not looked at. A share token is READ too, and its
 * queries are checked against what a share may select before they run (`schema/share-scope.ts`,
 * which also fences every root field and every Session the schema returns).
 */
export function useKeyScopes(): Plugin {
  return {
    onExecute({ args, setResultAndStopExecution }) {
      const context = args.contextValue as { scope?: KeyScope; share?: unknown };
      if (context.scope !== 'READ') return;
      const operation = getOperationAST(args.document, args.operationName);
      if (context.share && operation && operation.operation !== 'mutation') {
        const fragments: Record<string, FragmentDefinitionNode> = {};
        for (const d of args.document.definitions) if (d.kind === 'FragmentDefinition') fragments[d.name.value] = d;
        try {
          assertShareOperation(args.schema, operation, fragments);
        } catch (error) {
          if (error instanceof DomainError) return setResultAndStopExecution({ errors: [toGraphQLError(error)] });
          throw error;
        }
        return;
      }
      if (operation?.operation !== 'mutation') return;
      const fields = operation.selectionSet.selections.flatMap((s) => (s.kind === 'Field' ? [s.name.value] : []));
      const error = context.share
        ? new DomainError('FORBIDDEN', `A share link only reads its session: it runs no mutation (${fields.join(', ') || 'mutation'}).`, {
            scope: 'READ',
          })
        : new DomainError(
            'FORBIDDEN',
            `This API key has scope READ: it may run queries and subscriptions but no mutation (${fields.join(', ') || 'mutation'}). ` +
              'Use a key with scope FULL (`npm run keys -- create --workspace W`).',
            { scope: 'READ' },
          );
      setResultAndStopExecution({ errors: [toGraphQLError(error)] });
    },
  };
}
