// Writes docs/api.md (`npm run docs`) from the schema's own descriptions and the worked examples in
// docs/examples.ts, and docs/operations.md's configuration table (print-config.ts);
// test/integration/api-docs.test.ts and test/unit/config-table.test.ts fail when either differs from
// what is printed.
import { writeFileSync } from 'node:fs';
import {
  astFromValue,
  type GraphQLArgument,
  type GraphQLField,
  type GraphQLInputField,
  type GraphQLNamedType,
  type GraphQLObjectType,
  type GraphQLSchema,
  type GraphQLType,
  getNamedType,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isObjectType,
  isScalarType,
  isSpecifiedScalarType,
  isUnionType,
  print,
} from 'graphql';
import { type ApiExample, EXAMPLES, SEEDED_MESSAGES } from '../docs/examples.js';
import { schema } from '../src/schema/index.js';
import { writeConfigTable } from './print-config.js';

export const DOCS_FILE = new URL('../docs/api.md', import.meta.url);

const KIND_OF = (type: GraphQLNamedType) =>
  isObjectType(type)
    ? 'object'
    : isInterfaceType(type)
      ? 'interface'
      : isUnionType(type)
        ? 'union'
        : isInputObjectType(type)
          ? 'input'
          : isEnumType(type)
            ? 'enum'
            : 'scalar';

/** GitHub's heading anchor for `### Name (kind)`. */
const anchorOf = (type: GraphQLNamedType) => `${type.name.toLowerCase()}-${KIND_OF(type)}`;

/** Descriptions are Markdown already; one paragraph per line keeps list items intact. */
const text = (description: string | null | undefined) =>
  (description ?? '')
    .trim()
    .replace(/\n\s*\n/g, ' ')
    .replace(/\n/g, ' ');

/** `[Session!]!` with the named type linked to its section (built-in scalars have none). */
function typeRef(type: GraphQLType): string {
  const named = getNamedType(type);
  const printed = String(type);
  return isSpecifiedScalarType(named) ? `\`${printed}\`` : printed.replace(named.name, `[${named.name}](#${anchorOf(named)})`);
}

/** ": description", or nothing when there is none. */
const said = (description: string | null | undefined) => (text(description) ? `: ${text(description)}` : '');

function defaultOf(arg: GraphQLArgument | GraphQLInputField): string {
  if (arg.defaultValue === undefined) return '';
  const ast = astFromValue(arg.defaultValue, arg.type);
  return ast ? ` = \`${print(ast)}\`` : '';
}

const deprecation = (reason: string | null | undefined) => (reason ? ` **Deprecated:** ${text(reason)}` : '');

function argumentLines(args: readonly GraphQLArgument[], indent: string): string[] {
  return args.map((arg) => `${indent}- \`${arg.name}\`: ${typeRef(arg.type)}${defaultOf(arg)}${said(arg.description)}`);
}

function fieldLines(field: GraphQLField<unknown, unknown>): string[] {
  return [
    `- **\`${field.name}\`**: ${typeRef(field.type)}${said(field.description)}${deprecation(field.deprecationReason)}`,
    ...argumentLines(field.args, '  '),
  ];
}

function exampleLines(example: ApiExample): string[] {
  return [
    '',
    `**Example.** ${example.summary}`,
    '',
    '```graphql',
    example.document,
    '```',
    '',
    'Variables:',
    '',
    '```json',
    JSON.stringify(example.variables, null, 2),
    '```',
    '',
    example.kind === 'subscription' ? 'One event:' : 'Response (`data`):',
    '',
    '```json',
    JSON.stringify(example.response, null, 2),
    '```',
  ];
}

const ROOT_OF = { query: 'Query', mutation: 'Mutation', subscription: 'Subscription' } as const;

function rootSection(title: string, type: GraphQLObjectType | null | undefined): string[] {
  if (!type) return [];
  const lines = [`## ${title}`, '', text(type.description)];
  for (const field of Object.values(type.getFields()).sort((a, b) => a.name.localeCompare(b.name))) {
    const args = field.args.map((a) => `${a.name}: ${a.type}`).join(', ');
    lines.push('', `### ${field.name}`, '', `\`${field.name}${args ? `(${args})` : ''}: ${field.type}\``, '');
    lines.push(`${text(field.description)}${deprecation(field.deprecationReason)}`, '', `Returns ${typeRef(field.type)}.`);
    if (field.args.length) lines.push('', 'Arguments:', '', ...argumentLines(field.args, ''));
    // A field may have more than one example (createSession: a root session, then a sub-agent session).
    for (const example of EXAMPLES.filter((e) => e.field === field.name && type.name === ROOT_OF[e.kind])) {
      lines.push(...exampleLines(example));
    }
  }
  return [...lines, ''];
}

function typeLines(type: GraphQLNamedType): string[] {
  const lines = ['', `### ${type.name} (${KIND_OF(type)})`, '', text(type.description)];
  if (isObjectType(type) || isInterfaceType(type)) {
    const interfaces = type.getInterfaces();
    if (interfaces.length) lines.push('', `Implements ${interfaces.map(typeRef).join(', ')}.`);
    if (isInterfaceType(type)) {
      const implementations = schema
        .getImplementations(type)
        .objects.map((t) => t.name)
        .sort();
      lines.push('', `Implemented by ${implementations.map((name) => typeRef(schema.getType(name)!)).join(', ')}.`);
    }
    lines.push('');
    for (const field of Object.values(type.getFields())) lines.push(...fieldLines(field));
  } else if (isUnionType(type)) {
    lines.push('', `One of ${type.getTypes().map(typeRef).join(', ')}.`);
  } else if (isInputObjectType(type)) {
    if (type.isOneOf) lines.push('', 'Exactly one of these fields must be given (`@oneOf`).');
    lines.push('');
    for (const field of Object.values(type.getFields())) {
      lines.push(
        `- **\`${field.name}\`**: ${typeRef(field.type)}${defaultOf(field)}${said(field.description)}${deprecation(field.deprecationReason)}`,
      );
    }
  } else if (isEnumType(type)) {
    lines.push('');
    for (const value of type.getValues())
      lines.push(`- \`${value.name}\`${said(value.description)}${deprecation(value.deprecationReason)}`);
  } else if (isScalarType(type) && type.specifiedByURL) {
    lines.push('', `Specified by <${type.specifiedByURL}>.`);
  }
  return lines;
}

/** The whole of docs/api.md for a schema. */
export function printDocs(target: GraphQLSchema = schema): string {
  const roots = [target.getQueryType(), target.getMutationType(), target.getSubscriptionType()];
  const types = Object.values(target.getTypeMap())
    .filter((t) => !t.name.startsWith('__') && !isSpecifiedScalarType(t) && !roots.includes(t as GraphQLObjectType))
    .sort((a, b) => a.name.localeCompare(b.name));
  const lines = [
    '# session-graph API',
    '',
    '<!-- Generated by `npm run docs` from the schema descriptions and docs/examples.ts: edit those, not this file. -->',
    '',
    'One GraphQL endpoint, `/graphql`: queries and mutations over HTTP POST, subscriptions over WebSocket',
    '(graphql-ws protocol) or Server-Sent Events on the same path. With API keys configured, send',
    '`Authorization: Bearer <key>` (over WebSocket: as `connectionParams`). IDs are global and opaque;',
    '`node(id:)` resolves any of them. Expected errors carry `extensions.code`. The printed schema is',
    '[`schema.graphql`](../schema.graphql).',
    '',
    'Each mutation and subscription has a worked example (and `attachment`, which reads a file seeded in a session',
    'of its own). Apart from createSession (which makes a session of its own) and updateMessage (which finishes an',
    'assistant message still generating), they act on a session holding this conversation:',
    '',
    ...SEEDED_MESSAGES.map((m, index) => `${index}. ${m.role}: ${m.text}`),
    '',
    `They run in this order: ${EXAMPLES.map((e) => `[${e.field}](#${e.field.toLowerCase()})`).join(', ')}. A test runs`,
    'them in that order against a real server and expects exactly the responses shown, IDs and times aside.',
    '',
    '- [Queries](#queries)',
    '- [Mutations](#mutations)',
    '- [Subscriptions](#subscriptions)',
    '- [Types](#types)',
    '',
    ...rootSection('Queries', roots[0]),
    ...rootSection('Mutations', roots[1]),
    ...rootSection('Subscriptions', roots[2]),
    '## Types',
    '',
    'Every other type of the schema, in alphabetical order.',
    ...types.flatMap((t) => typeLines(t)),
  ];
  return `${lines
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trimEnd()}\n`;
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop()!)) {
  writeFileSync(DOCS_FILE, printDocs());
  writeConfigTable();
  console.log('wrote docs/api.md and the configuration table of docs/operations.md');
}
