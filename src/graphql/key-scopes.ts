import type { Plugin } from 'graphql-yoga';
import type { KeyScope } from '../config.js';
import { getOperationAST } from 'graphql';
import { DomainError, toGraphQLError } from './errors.js';

/**
 * A READ key runs queries and subscriptions; a mutation gets FORBIDDEN, naming the scope, before
 * any resolver runs. On envelop's `onExecute`, so it holds wherever an operation executes: Yoga's
 * HTTP and SSE path, the HTTP fast path and graphql-ws (whose queries and mutations execute through
 * envelop). Subscriptions never write, so they are not looked at.
 */
export function useKeyScopes(): Plugin {
  return {
    onExecute({ args, setResultAndStopExecution }) {
      if ((args.contextValue as { scope?: KeyScope }).scope !== 'READ') return;
      const operation = getOperationAST(args.document, args.operationName);
      if (operation?.operation !== 'mutation') return;
      const fields = operation.selectionSet.selections.flatMap((s) => (s.kind === 'Field' ? [s.name.value] : []));
      const error = new DomainError(
        'FORBIDDEN',
        `This API key has scope READ: it may run queries and subscriptions but no mutation (${fields.join(', ') || 'mutation'}). ` +
          'Use a key with scope FULL (`npm run keys -- create --workspace W`).',
        { scope: 'READ' },
      );
      setResultAndStopExecution({ errors: [toGraphQLError(error)] });
    },
  };
}
