import { readFileSync } from 'node:fs';
import type { Plugin } from 'graphql-yoga';
import { ConfigError } from '../config.js';
import { DomainError, errorAt } from '../graphql/errors.js';
import type { GraphQLError } from 'graphql';
import { usePersistedOperations } from '@graphql-yoga/plugin-persisted-operations';

/** The parts of a request's parameters (HTTP body or query string, graphql-ws payload) that name a document. */
export interface DocumentParams {
  query?: unknown;
  documentId?: unknown;
  extensions?: unknown;
}

/**
 * Reads a trusted documents manifest: the JSON object of `hash → document` that GraphQL Code
 * Generator's client preset writes as `persisted-documents.json`. Throws a message naming the
 * file when it cannot be used.
 */
export function loadTrustedDocuments(path: string): Map<string, string> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ConfigError(`TRUSTED_DOCUMENTS: cannot read ${path} as JSON (${(error as Error).message}).`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError(`TRUSTED_DOCUMENTS: ${path} must hold one JSON object of hash → document.`);
  }
  const documents = new Map<string, string>();
  for (const [hash, document] of Object.entries(parsed)) {
    if (typeof document !== 'string' || !document.trim())
      throw new ConfigError(`TRUSTED_DOCUMENTS: the entry ${hash} of ${path} is not a document.`);
    documents.set(hash, document);
  }
  return documents;
}

/**
 * Trusted documents (TRUSTED_DOCUMENTS): a request names a document of the manifest by
 * `documentId` or by `extensions.persistedQuery.sha256Hash` (Apollo's automatic persisted queries
 * shape, version 1), and runs it; a name the manifest lacks is NOT_FOUND (404). A document sent as
 * text is refused with FORBIDDEN (403) unless `allowsAdHoc` says the request may (the app allows it
 * to full-scope keys when GRAPHIQL is on, which is how GraphiQL keeps working where the operator
 * wants it). Over HTTP this is Yoga's persisted operations plugin (`onParams`; the fast path takes
 * only requests that name a listed document without sending text, found with the same
 * `documentFor`); graphql-ws subscribe messages go through `resolve`.
 */
export class TrustedDocuments {
  constructor(
    private readonly documents: Map<string, string>,
    /** Whether the request with this `Authorization` may send a document as text. */
    private readonly allowsAdHoc: (authorization: string | null) => Promise<boolean>,
  ) {}

  get size() {
    return this.documents.size;
  }

  /** The manifest key a request names, if it names one. */
  idOf(params: DocumentParams): string | null {
    if (typeof params.documentId === 'string') return params.documentId;
    const persisted = (params.extensions as { persistedQuery?: { version?: unknown; sha256Hash?: unknown } } | null | undefined)
      ?.persistedQuery;
    return persisted?.version === 1 && typeof persisted.sha256Hash === 'string' ? persisted.sha256Hash : null;
  }

  /** The listed document a request names, or null (it names none, or one the manifest lacks). */
  documentFor(params: DocumentParams): string | null {
    const id = this.idOf(params);
    return id === null ? null : (this.documents.get(id) ?? null);
  }

  /** The document text a request runs, or the refusal it gets. */
  async resolve(params: DocumentParams, authorization: string | null): Promise<string> {
    const id = this.idOf(params);
    if (id !== null) {
      const document = this.documents.get(id);
      if (document === undefined) throw notTrusted(id);
      return document;
    }
    if (typeof params.query === 'string' && params.query.trim()) {
      if (await this.allowsAdHoc(authorization)) return params.query;
      throw adHocRefused();
    }
    throw new DomainError(
      'BAD_USER_INPUT',
      'Name a trusted document by `documentId` or by `extensions.persistedQuery.sha256Hash` (version 1).',
    );
  }

  /** Yoga's persisted operations plugin over this manifest (HTTP GET and POST, and SSE). */
  plugin(): Plugin {
    const refusal = (error: DomainError, status: number) => () => withStatus(error, status);
    return usePersistedOperations({
      getPersistedOperation: (id: string) => this.documents.get(id) ?? null,
      extractPersistedOperationId: (params) => this.idOf(params as DocumentParams),
      allowArbitraryOperations: (request: Request) => this.allowsAdHoc(request.headers.get('authorization')),
      customErrors: {
        notFound: (payload: { params: DocumentParams }) => withStatus(notTrusted(this.idOf(payload.params) ?? ''), 404),
        persistedQueryOnly: refusal(adHocRefused(), 403),
        keyNotFound: refusal(
          new DomainError(
            'BAD_USER_INPUT',
            'Name a trusted document by `documentId` or by `extensions.persistedQuery.sha256Hash` (version 1).',
          ),
          400,
        ),
      },
    } as Parameters<typeof usePersistedOperations>[0]) as Plugin;
  }
}

const notTrusted = (id: string) =>
  new DomainError(
    'NOT_FOUND',
    `No trusted document has the id ${JSON.stringify(id)}: this server runs only the documents of its manifest.`,
    {
      documentId: id,
    },
  );

const adHocRefused = () =>
  new DomainError(
    'FORBIDDEN',
    'This server runs only trusted documents: send `documentId` (or `extensions.persistedQuery.sha256Hash`) instead of the document text. ' +
      'Documents sent as text are allowed only for keys with scope FULL where the operator turned GraphiQL on.',
  );

/** A refusal as Yoga answers it: with its code, and the HTTP status (Yoga leaves `extensions.http` out of the body). */
const withStatus = (error: DomainError, status: number): GraphQLError =>
  errorAt(error.message, undefined, { code: error.code, ...error.details, http: { status } });
