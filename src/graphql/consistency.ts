import { type ExecutionResult, GraphQLError, getOperationAST } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { parseLsn, type ReplicaSet } from '../db/replicas.js';

/** The request header a client sends a mutation's `extensions.consistencyToken` back in (over WebSocket: `connectionParams.consistencyToken`). */
export const CONSISTENCY_HEADER = 'x-consistency-token';

/** Where the token of an operation is: the Fetch request's headers, or the WebSocket's `connectionParams`. */
interface TokenSources {
  request?: { headers: { get(name: string): string | null } };
  connectionParams?: Record<string, unknown>;
}

/** The token the operation sent (undefined: none), as a position; an `Error` when it is not one. */
function sentPosition(context: TokenSources): bigint | undefined | GraphQLError {
  const sent = context.request?.headers.get(CONSISTENCY_HEADER) ?? context.connectionParams?.consistencyToken;
  if (sent === undefined || sent === null || sent === '') return undefined;
  const position = typeof sent === 'string' && sent.length <= 40 ? parseLsn(sent.trim()) : null;
  if (position !== null) return position;
  return new GraphQLError(
    "The consistency token is not one this server gave: send back the `extensions.consistencyToken` of a mutation's response as it was (header `X-Consistency-Token`, or `connectionParams.consistencyToken` over WebSocket).",
    { extensions: { code: 'BAD_USER_INPUT' } },
  );
}

/**
 * Read replicas (DATABASE_REPLICA_URLS), on envelop's execute so that it holds on every path: a
 * query's statements are read from a replica that has replayed the token the client sent (or from
 * the primary when none has); a mutation's run on the primary, and its response carries the
 * primary's position after it as `extensions.consistencyToken`. A token that is not a position is
 * BAD_USER_INPUT, before anything runs. Subscriptions never execute here, and everything outside
 * an operation runs on the primary (db/replicas.ts).
 */
export function useReadReplicas(replicas: ReplicaSet): Plugin {
  return {
    onExecute({ args, executeFn, setExecuteFn, setResultAndStopExecution }) {
      const position = sentPosition(args.contextValue as TokenSources);
      if (position instanceof GraphQLError) return setResultAndStopExecution({ errors: [position] });
      const type = getOperationAST(args.document, args.operationName)?.operation;
      if (type === 'query') {
        setExecuteFn((run) => replicas.onReplica(position ?? 0n, () => executeFn(run)));
        return;
      }
      setExecuteFn(async (run) => {
        const result = (await replicas.onPrimary(() => executeFn(run))) as ExecutionResult;
        if (type !== 'mutation' || typeof result !== 'object' || result === null || !('data' in result || 'errors' in result))
          return result;
        // After the mutation's transactions committed: every one of them is at or before this position.
        const token = await replicas.position().catch(() => null);
        return token === null ? result : { ...result, extensions: { ...result.extensions, consistencyToken: token } };
      });
    },
  };
}
