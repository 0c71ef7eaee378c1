import type {
  ASTVisitor,
  DocumentNode,
  FragmentDefinitionNode,
  ParseOptions,
  SelectionSetNode,
  Source,
  ValidationContext,
  ValidationRule,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { asClientError } from './client-errors.js';
import { DomainError, toGraphQLError } from './errors.js';
import { GraphQLError, Kind, parse } from 'graphql';

export interface QueryLimits {
  /** Deepest nesting of fields, fragments expanded, outside introspection. */
  maxDepth: number;
  /** Deepest nesting through an introspection field (`__schema`, `__type`): GraphiQL's query is 15 deep. */
  maxIntrospectionDepth: number;
  /** Aliased fields in one operation, fragments expanded, introspection included. */
  maxAliases: number;
  /** Fields selected in one operation, fragments expanded once per use, introspection included. */
  maxFields: number;
  /** Lexical tokens in one document (graphql-js stops parsing past it). */
  maxTokens: number;
  /** Nesting of `{`, `[` and `(` in the document text, checked before the (recursive) parser runs. */
  maxNesting: number;
  /**
   * Fragment definitions in one document. graphql-js's validation costs time in the number of
   * distinct fragments (OverlappingFieldsCanBeMerged compares them pairwise), not in the tokens:
   * this bound, not the token cap, keeps checking any accepted document to a few milliseconds.
   */
  maxFragments: number;
  /** Fragment spreads written in the whole document, and spread in one operation with fragments expanded once per use. */
  maxFragmentSpreads: number;
}

export const DEFAULT_QUERY_LIMITS: QueryLimits = {
  maxDepth: 14,
  maxIntrospectionDepth: 20,
  maxAliases: 30,
  maxFields: 2_000,
  maxTokens: 20_000,
  maxNesting: 128,
  maxFragments: 64,
  maxFragmentSpreads: 2_000,
};

const tooComplex = (problem: string) =>
  toGraphQLError(new DomainError('QUERY_TOO_COMPLEX', `This operation ${problem}; split it into smaller ones.`));

/** What a selection set costs, its fragments expanded. */
interface Measure {
  /** Field levels, introspection subtrees counted as one level. */
  depth: number;
  /** Field levels, everything counted. */
  fullDepth: number;
  /** Field levels down to the deepest point inside an introspection subtree (0 if none). */
  introspectionDepth: number;
  fields: number;
  aliases: number;
  /** Fragment spreads, each fragment expanded at every use. */
  spreads: number;
}

const EMPTY: Measure = { depth: 0, fullDepth: 0, introspectionDepth: 0, fields: 0, aliases: 0, spreads: 0 };

/**
 * The measure of each operation of a document: a plain walk of the syntax tree (no schema, no type
 * information), each fragment measured once and its measure reused at every spread, so its cost is
 * linear in the document even when fragments double at each level (`F_i { ...F_{i-1} ...F_{i-1} }`
 * expands to 2^n fields and is counted, not expanded). A spread that closes a cycle counts as
 * empty: graphql-js's NoFragmentCycles refuses the document anyway.
 */
function measureOperations(document: DocumentNode): Measure[] {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const def of document.definitions) {
    if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);
  }
  const measured = new Map<string, Measure>();
  const inProgress = new Set<string>();

  const fragmentMeasure = (name: string): Measure => {
    const known = measured.get(name);
    if (known) return known;
    const fragment = fragments.get(name);
    if (!fragment || inProgress.has(name)) return EMPTY;
    inProgress.add(name);
    const result = measure(fragment.selectionSet);
    inProgress.delete(name);
    measured.set(name, result);
    return result;
  };

  const measure = (set: SelectionSetNode): Measure => {
    const total = { ...EMPTY };
    const add = (m: Measure, levels: number, introspection: boolean) => {
      total.fields += m.fields;
      total.aliases += m.aliases;
      total.spreads += m.spreads;
      total.fullDepth = Math.max(total.fullDepth, levels + m.fullDepth);
      if (introspection) {
        total.depth = Math.max(total.depth, levels);
        total.introspectionDepth = Math.max(total.introspectionDepth, levels + m.fullDepth);
      } else {
        total.depth = Math.max(total.depth, levels + m.depth);
        if (m.introspectionDepth > 0) total.introspectionDepth = Math.max(total.introspectionDepth, levels + m.introspectionDepth);
      }
    };
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) {
        total.fields++;
        if (selection.alias) total.aliases++;
        const child = selection.selectionSet ? measure(selection.selectionSet) : EMPTY;
        add(child, 1, selection.name.value.startsWith('__'));
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        add(measure(selection.selectionSet), 0, false);
      } else {
        total.spreads++;
        add(fragmentMeasure(selection.name.value), 0, false);
      }
    }
    return total;
  };

  return document.definitions.flatMap((def) => (def.kind === Kind.OPERATION_DEFINITION ? [measure(def.selectionSet)] : []));
}

/** Fields the largest operation of `document` selects, fragments expanded once per use (linear in the document). */
export function operationFields(document: DocumentNode): number {
  return Math.max(0, ...measureOperations(document).map((m) => m.fields));
}

/**
 * What is wrong with a document by the limits (too deep, too wide or too aliased): a nested session
 * graph is cheap per level, but unbounded nesting is not.
 */
export function queryLimitProblems(document: DocumentNode, limits: QueryLimits): string[] {
  // The document-wide counts first: one flat pass, so a document refused by them is never walked
  // fragment by fragment.
  const { fragments, spreads } = fragmentCounts(document);
  if (fragments > limits.maxFragments) return [fragmentsProblem(fragments, limits)];
  if (spreads > limits.maxFragmentSpreads) return [spreadsProblem(spreads, limits)];
  const problems: string[] = [];
  for (const m of measureOperations(document)) {
    const problem =
      m.depth > limits.maxDepth
        ? `is ${m.depth} levels deep (at most ${limits.maxDepth})`
        : m.introspectionDepth > limits.maxIntrospectionDepth
          ? `is ${m.introspectionDepth} levels deep in introspection (at most ${limits.maxIntrospectionDepth})`
          : m.aliases > limits.maxAliases
            ? `has ${m.aliases} aliases (at most ${limits.maxAliases})`
            : m.fields > limits.maxFields
              ? `selects ${m.fields} fields (at most ${limits.maxFields})`
              : m.spreads > limits.maxFragmentSpreads
                ? `spreads fragments ${m.spreads} times, expanded (at most ${limits.maxFragmentSpreads})`
                : null;
    if (problem) problems.push(problem);
  }
  return problems;
}

const fragmentsProblem = (fragments: number, limits: QueryLimits) => `defines ${fragments} fragments (at most ${limits.maxFragments})`;
const spreadsProblem = (spreads: number, limits: QueryLimits) =>
  `spreads fragments ${spreads} times (at most ${limits.maxFragmentSpreads})`;

/** Fragment definitions and spreads written in a document (not expanded): a walk of its syntax tree. */
function fragmentCounts(document: DocumentNode): { fragments: number; spreads: number } {
  let fragments = 0;
  let spreads = 0;
  const count = (set: SelectionSetNode) => {
    for (const selection of set.selections) {
      if (selection.kind === Kind.FRAGMENT_SPREAD) spreads++;
      else if (selection.selectionSet) count(selection.selectionSet);
    }
  };
  for (const def of document.definitions) {
    if (def.kind === Kind.FRAGMENT_DEFINITION) fragments++;
    if (def.kind === Kind.FRAGMENT_DEFINITION || def.kind === Kind.OPERATION_DEFINITION) count(def.selectionSet);
  }
  return { fragments, spreads };
}

/** The limits as a validation rule (`queryLimitProblems`, reported with QUERY_TOO_COMPLEX). */
export function queryLimitsRule(limits: QueryLimits): ValidationRule {
  return (context: ValidationContext): ASTVisitor => {
    for (const problem of queryLimitProblems(context.getDocument(), limits)) context.reportError(tooComplex(problem));
    return {};
  };
}

/** What a linear scan of a document's text finds, before any parsing. */
export interface DocumentTextScan {
  /** The deepest nesting of `{`, `[` and `(`. */
  nesting: number;
  /** The keyword `fragment` outside any bracket: fragment definitions (an operation or type named `fragment` counts too). */
  fragments: number;
  /** `...`: fragment spreads and inline fragments. */
  spreads: number;
}

const isNameChar = (c: number) => (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f;

/**
 * Scans a GraphQL document's text, strings, block strings and comments skipped. graphql-js
 * parses recursively (10,000 nested selections or list literals overflow its stack), and parsing
 * a document of thousands of fragments costs tens of milliseconds under the token cap: this scan
 * runs first, so such a document is refused before the parser allocates anything.
 */
export function scanDocumentText(text: string): DocumentTextScan {
  let depth = 0;
  let nesting = 0;
  let fragments = 0;
  let spreads = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x7b || c === 0x5b || c === 0x28) {
      if (++depth > nesting) nesting = depth;
    } else if (c === 0x7d || c === 0x5d || c === 0x29) {
      if (depth > 0) depth--;
    } else if (c === 0x2e) {
      if (text.startsWith('...', i)) {
        spreads++;
        i += 2;
      }
    } else if (c === 0x66 && depth === 0 && text.startsWith('fragment', i) && !isNameChar(text.charCodeAt(i + 8))) {
      if (i === 0 || !isNameChar(text.charCodeAt(i - 1))) fragments++;
      i += 7;
    } else if (c === 0x23) {
      // # comment to the end of the line
      while (i + 1 < n && text.charCodeAt(i + 1) !== 0x0a && text.charCodeAt(i + 1) !== 0x0d) i++;
    } else if (c === 0x22) {
      if (text.startsWith('"""', i)) {
        i += 3;
        while (i < n && !text.startsWith('"""', i)) i += text.startsWith('\\"""', i) ? 4 : 1;
        i += 2;
      } else {
        i++;
        while (i < n && text.charCodeAt(i) !== 0x22 && text.charCodeAt(i) !== 0x0a) i += text.charCodeAt(i) === 0x5c ? 2 : 1;
      }
    } else if (isNameChar(c)) {
      // The rest of a name, so `fragment` is only found where a name starts.
      while (i + 1 < n && isNameChar(text.charCodeAt(i + 1))) i++;
    }
  }
  return { nesting, fragments, spreads };
}

/**
 * Parsing with limits: the text's scan (nesting, fragments, spreads), then graphql-js's parser with `maxTokens`. A syntax error
 * is the client's: it answers BAD_USER_INPUT (graphql-js gives it no code).
 */
export function limitedParse(limits: QueryLimits) {
  return (source: string | Source, options?: ParseOptions) => {
    const text = typeof source === 'string' ? source : source.body;
    const { nesting, fragments, spreads } = scanDocumentText(text);
    if (nesting > limits.maxNesting) throw tooComplex(`nests brackets ${nesting} deep (at most ${limits.maxNesting})`);
    if (fragments > limits.maxFragments) throw tooComplex(fragmentsProblem(fragments, limits));
    if (spreads > limits.maxFragmentSpreads) throw tooComplex(spreadsProblem(spreads, limits));
    try {
      return parse(source, { ...options, maxTokens: limits.maxTokens });
    } catch (error) {
      if (error instanceof GraphQLError && !error.extensions.code) {
        // graphql 16 spells it "more that N tokens".
        if (/more tha[nt] \d+ tokens/.test(error.message)) throw tooComplex(`has more than ${limits.maxTokens} tokens`);
        throw new GraphQLError(error.message, {
          source: error.source,
          positions: error.positions,
          extensions: { code: 'BAD_USER_INPUT' },
        });
      }
      throw error;
    }
  };
}

export function useQueryLimits(limits: QueryLimits = DEFAULT_QUERY_LIMITS): Plugin {
  const parseWithLimits = limitedParse(limits);
  // What the limits say of a document depends on its syntax tree alone (the limits are fixed, no
  // request context enters), and Yoga's parse cache hands out the same DocumentNode for the same
  // text: measure each document once. Weak: it lives as long as the parse cache keeps the node.
  const verdicts = new WeakMap<DocumentNode, readonly GraphQLError[]>();
  const limitErrors = (document: DocumentNode) => {
    let errors = verdicts.get(document);
    if (!errors) verdicts.set(document, (errors = queryLimitProblems(document, limits).map(tooComplex)));
    return errors;
  };
  return {
    onParse({ setParseFn }) {
      setParseFn(parseWithLimits);
    },
    onValidate({ params, setResult }) {
      // The limits first, alone and without graphql-js's validate: its own rules are superlinear on
      // some documents a limit refuses (OverlappingFieldsCanBeMerged on many aliased __schema), and
      // even one rule walks the document with type information, where the limits need only the
      // syntax tree. The verdict is the document's alone (cached per node); envelop still runs every
      // other plugin's onValidate for this request.
      const refused = limitErrors(params.documentAST);
      if (refused.length) {
        setResult([...refused]);
        return;
      }
      // Validation errors skip the masking step (graphql-yoga only masks execution results).
      return ({ result, setResult: replace }) => {
        if (result.length) replace(result.map((error) => asClientError(error) ?? error));
      };
    },
  };
}
