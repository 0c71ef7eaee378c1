import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { GraphQLError } from 'graphql';
import { describe, expect, it } from 'vitest';
import { DomainError } from '../../src/domain/errors.js';
import { domainErrorOf, toGraphQLError } from '../../src/graphql/errors.js';

const files = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : [path];
  });

describe('domain errors', () => {
  it('are plain errors with a code, mapped to a GraphQL error with extensions.code in one place', () => {
    const refusal = new DomainError('SESSION_HAS_FORKS', 'It has forks.', { forkCount: 2 });
    expect(refusal).not.toBeInstanceOf(GraphQLError);
    const located = new GraphQLError('wrapped', { path: ['deleteSession'], originalError: refusal });
    expect(domainErrorOf(located)).toBe(refusal);
    const mapped = toGraphQLError(refusal, located);
    expect(mapped).toBeInstanceOf(GraphQLError);
    expect(mapped.toJSON()).toEqual({
      message: 'It has forks.',
      path: ['deleteSession'],
      extensions: { code: 'SESSION_HAS_FORKS', forkCount: 2 },
    });
  });

  it('leave src/domain free of graphql and of the database layer', () => {
    const offending = files('src/domain').filter((file) => /from '(graphql|[./]*\/db\/[^']*)'/.test(readFileSync(file, 'utf8')));
    expect(offending).toEqual([]);
  });
});
