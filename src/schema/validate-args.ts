import type { GraphQLArgument, GraphQLFieldResolver, GraphQLInputType, GraphQLSchema } from 'graphql';
import { checkJson, checkName, checkString, checkTitle } from '../domain/input.js';
import { LONG_TEXT } from '../caches/token-precount.js';
import { MAX_PAGE } from '../domain/pagination.js';
import { LIMITS, type TextCaps } from '../domain/limits.js';
import type { RequestContext } from '../graphql/context.js';
import { badInput } from '../graphql/errors.js';
import { getNamedType, isInputObjectType, isListType, isNonNullType, isObjectType, isScalarType } from 'graphql';

/** Input fields and arguments that name something (ids, tool and file names): short and not blank. */
const NAME_FIELDS = new Set(['agentId', 'agentIds', 'callId', 'name', 'mimeType', 'model', 'id', 'after', 'before']);

/**
 * Checks one argument value against its type; returns the characters of string and JSON it holds,
 * and collects the long strings in `long` (to be token-counted off the request thread).
 */
function checkValue(value: unknown, type: GraphQLInputType, where: string, field: string, long: string[], caps: TextCaps): number {
  if (value === null || value === undefined) return 0;
  if (isNonNullType(type)) return checkValue(value, type.ofType, where, field, long, caps);
  if (isListType(type)) {
    if (!Array.isArray(value)) return checkValue(value, type.ofType, where, field, long, caps);
    let length = 0;
    for (let i = 0; i < value.length; i++) length += checkValue(value[i], type.ofType, `${where}[${i}]`, field, long, caps);
    return length;
  }
  if (isInputObjectType(type)) {
    let length = 0;
    for (const [name, inputField] of Object.entries(type.getFields())) {
      if (type.name === 'AttachmentPartInput' && name === 'data') {
        checkBase64Length((value as Record<string, unknown>)[name], `${where}.${name}`, caps);
        continue;
      }
      length += checkValue((value as Record<string, unknown>)[name], inputField.type, `${where}.${name}`, name, long, caps);
    }
    return length;
  }
  if (!isScalarType(type)) return 0;
  if (type.name === 'JSON') return checkJson(value, where);
  if (typeof value !== 'string') return 0;
  if (type.name === 'ID') checkString(value, where, LIMITS.idLength);
  else if (field === 'title') checkTitle(value, where, caps.stringLength);
  else if (NAME_FIELDS.has(field)) checkName(value, where);
  else checkString(value, where, caps.stringLength);
  if (value.length >= LONG_TEXT) long.push(value);
  return value.length;
}

/**
 * An attachment's base64 `data`: bounded by the file cap (as base64), not the string cap, never
 * counted as text of the arguments (the request body cap bounds it first) nor token-counted.
 */
function checkBase64Length(value: unknown, where: string, caps: TextCaps) {
  if (typeof value !== 'string') return;
  const max = Math.ceil(caps.fileBytes / 3) * 4;
  if (value.length > max) {
    throw badInput(
      `${where} is ${value.length} characters of base64, more than ${max} (${caps.fileBytes} bytes, the file cap on this server).`,
    );
  }
}

/** Connection page sizes: the same bounds on every connection, refused rather than clamped. */
const PAGE_ARGS = new Set(['first', 'last']);

/** Checks every argument of a field against the app's caps; returns the long strings among them. */
function checkArguments(args: readonly GraphQLArgument[], values: Record<string, unknown>, caps: TextCaps): string[] {
  const long: string[] = [];
  let length = 0;
  for (const arg of args) {
    const value = values[arg.name];
    if (PAGE_ARGS.has(arg.name) && typeof value === 'number' && (value < 0 || value > MAX_PAGE)) {
      throw badInput(`${arg.name} must be from 0 to ${MAX_PAGE}.`);
    }
    length += checkValue(value, arg.type, arg.name, arg.name, long, caps);
  }
  if (length > caps.argumentsLength) {
    throw badInput(
      `The arguments hold ${length} characters of text and JSON (at most ${caps.argumentsLength} per operation field); send them in several calls.`,
    );
  }
  return long;
}

/**
 * Applies the input rules of `domain/input.ts` to every argument of every field, in this one
 * place: each field's `resolve` (and a subscription's `subscribe`) is wrapped once so its
 * arguments, as coerced by graphql-js, are checked before the field's own code runs. A refused
 * argument answers BAD_USER_INPUT naming its path (`input.messages[0].text`) and the cap. The
 * caps that depend on the backend come from the request context (`RequestContext.caps`). Long
 * strings are token-counted in a worker before the resolver runs (`RequestContext.precount`), so
 * that the resolver's own count finds them counted instead of stalling every other request.
 */
export function validateArguments(schema: GraphQLSchema): GraphQLSchema {
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || type.name.startsWith('__')) continue;
    for (const field of Object.values(type.getFields())) {
      if (!field.args.some((a) => PAGE_ARGS.has(a.name) || needsCheck(a.type))) continue;
      const args = field.args;
      const wrap = (inner: GraphQLFieldResolver<unknown, unknown> | undefined): GraphQLFieldResolver<unknown, unknown> | undefined => {
        if (!inner) return inner;
        return (source, values, context, info) => {
          const long = checkArguments(args, values, (context as RequestContext).caps);
          if (long.length === 0) return inner(source, values, context, info);
          return (context as RequestContext).precount.count(long).then(() => inner(source, values, context, info));
        };
      };
      field.resolve = wrap(field.resolve);
      field.subscribe = wrap(field.subscribe);
    }
  }
  return schema;
}

/** Whether any string or JSON can reach this argument (Int and Boolean arguments need no check). */
function needsCheck(type: GraphQLInputType, seen = new Set<string>()): boolean {
  const named = getNamedType(type);
  if (isScalarType(named)) return ['String', 'ID', 'JSON'].includes(named.name) || !['Int', 'Float', 'Boolean'].includes(named.name);
  if (!isInputObjectType(named)) return false;
  if (seen.has(named.name)) return false;
  seen.add(named.name);
  return Object.values(named.getFields()).some((f) => needsCheck(f.type, seen));
}
