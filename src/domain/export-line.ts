/**
 * The checks of one line of the export format (domain/export-format.ts) on its own: JSON, a known
 * type, every field of the type the schema (docs/export.schema.json) says. What a line must be in
 * its place in the file is export-check.ts's.
 */
import { badInput } from './errors.js';
import { EXPORT_FORMAT, EXPORT_VERSION, type ExportLine, type HeaderLine } from './export-format.js';
import { checkStoredParts } from './export-parts.js';
import { LIMITS } from './limits.js';

type Kind = 'string' | 'string?' | 'int' | 'int?' | 'number' | 'bool' | 'date' | 'date?' | 'json' | 'json?' | 'strings' | 'bigint';

const ID_FIELDS = new Set(['id', 'sessionId', 'turnId', 'messageId', 'parentId', 'rootId', 'parentTurnId', 'forkPointMessageId']);
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/;
const DECIMAL = /^\d{1,19}$/;
const INT_MAX = 2 ** 31 - 1;

function checkField(line: Record<string, unknown>, key: string, kind: Kind): void {
  const value = line[key];
  const fail = (what: string) => {
    throw badInput(`"${key}" must be ${what}.`);
  };
  const nullable = kind.endsWith('?');
  if (nullable && (value === null || value === undefined)) {
    line[key] = null;
    return;
  }
  switch (kind.replace('?', '')) {
    case 'string':
      if (typeof value !== 'string') fail(nullable ? 'a string or null' : 'a string');
      if (ID_FIELDS.has(key) && (value as string).length > LIMITS.idLength) fail(`at most ${LIMITS.idLength} characters`);
      return;
    case 'int':
      if (!Number.isSafeInteger(value) || (value as number) < 0 || (value as number) > INT_MAX) {
        fail(nullable ? 'an integer from 0 to 2^31 − 1, or null' : 'an integer from 0 to 2^31 − 1');
      }
      return;
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value)) fail('a number');
      return;
    case 'bool':
      if (typeof value !== 'boolean') fail('true or false');
      return;
    case 'date':
      if (typeof value !== 'string' || !ISO.test(value) || Number.isNaN(Date.parse(value))) fail('an ISO 8601 time in UTC');
      return;
    case 'json':
      if (value === undefined) line[key] = null;
      return;
    case 'strings':
      if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) fail('an array of strings');
      return;
    case 'bigint':
      if (typeof value !== 'string' || !DECIMAL.test(value) || BigInt(value) > 9223372036854775807n) fail('a decimal string ≥ 0');
      return;
  }
}

function checkEnum(line: Record<string, unknown>, key: string, values: readonly string[]): void {
  if (!values.includes(line[key] as string)) throw badInput(`"${key}" must be one of ${values.join(', ')}.`);
}

const USAGE: [string, Kind][] = [
  ['inputTokens', 'bigint'],
  ['outputTokens', 'bigint'],
  ['cacheReadTokens', 'bigint'],
  ['cacheWriteTokens', 'bigint'],
  ['cost', 'number'],
];
const STATUSES = ['ACTIVE', 'COMPLETED', 'FAILED', 'CANCELLED'] as const;

const FIELDS: Record<Exclude<ExportLine['type'], 'header'>, [string, Kind][]> = {
  session: [
    ['id', 'string'],
    ['title', 'string'],
    ['settings', 'json'],
    ['metadata', 'json'],
    ['parentId', 'string?'],
    ['rootId', 'string'],
    ['ancestorIds', 'strings'],
    ['depth', 'int'],
    ['forkIndex', 'int?'],
    ['forkPointMessageId', 'string?'],
    ['parentTurnId', 'string?'],
    ['parentMessageCount', 'int?'],
    ['agentId', 'string?'],
    ['messageCount', 'int'],
    ['compactionCount', 'int'],
    ['transformCount', 'int'],
    ['turnCount', 'int'],
    ['activeTurnId', 'string?'],
    ['createdAt', 'date'],
    ['updatedAt', 'date'],
  ],
  turn: [
    ['id', 'string'],
    ['sessionId', 'string'],
    ['number', 'int'],
    ['clientTurnId', 'string?'],
    ['initiatorId', 'string?'],
    ['error', 'string?'],
    ['context', 'json?'],
    ['contextSettingsFingerprint', 'string?'],
    ['contextHistoryMark', 'int?'],
    ['startedAt', 'date'],
    ['completedAt', 'date?'],
    ['lastActivityAt', 'date'],
    ...USAGE,
  ],
  usage: [
    ['id', 'string'],
    ['turnId', 'string'],
    ['callId', 'string?'],
    ['agentId', 'string'],
    ['model', 'string?'],
    ['createdAt', 'date'],
    ...USAGE,
  ],
  attachment: [
    ['id', 'string'],
    ['sessionId', 'string'],
    ['name', 'string'],
    ['mimeType', 'string'],
    ['size', 'int'],
    ['sha256', 'string'],
    ['content', 'string?'],
    ['data', 'string?'],
    ['width', 'int?'],
    ['height', 'int?'],
    ['pages', 'int?'],
    ['url', 'string?'],
    ['providerFile', 'json?'],
    ['createdAt', 'date'],
  ],
  message: [
    ['id', 'string'],
    ['sessionId', 'string'],
    ['position', 'int'],
    ['toolCallIds', 'strings'],
    ['toolResultIds', 'strings'],
    ['generating', 'bool'],
    ['tokensO200k', 'int?'],
    ['tokensCl100k', 'int?'],
    ['turnId', 'string?'],
    ['agentId', 'string?'],
    ['createdAt', 'date'],
    ['updatedAt', 'date'],
  ],
  compaction: [
    ['id', 'string'],
    ['sessionId', 'string'],
    ['ordinal', 'int'],
    ['uptoIndex', 'int'],
    ['summary', 'string'],
    ['extractedContext', 'json?'],
    ['tokensO200k', 'int'],
    ['tokensCl100k', 'int'],
    ['createdAt', 'date'],
  ],
  transform: [
    ['id', 'string'],
    ['sessionId', 'string'],
    ['ordinal', 'int'],
    ['messageId', 'string?'],
    ['position', 'int'],
    ['reason', 'string?'],
    ['replacement', 'string?'],
    ['tokensO200k', 'int?'],
    ['tokensCl100k', 'int?'],
    ['createdAt', 'date'],
  ],
  end: [
    ['sessions', 'int'],
    ['messages', 'int'],
  ],
};

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The JSON of one line, checked for its type's fields (BAD_USER_INPUT saying what is wrong). */
export function checkLine(text: string): ExportLine {
  // PostgreSQL stores no NUL character in text or JSON.
  if (text.includes('\\u0000')) throw badInput('a NUL character (\\u0000) cannot be stored.');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw badInput('not JSON.');
  }
  if (!isObject(value)) throw badInput('a line must be a JSON object.');
  const type = value.type;
  if (type === 'header') {
    if (value.format !== EXPORT_FORMAT) throw badInput(`"format" must be "${EXPORT_FORMAT}".`);
    if (value.version !== EXPORT_VERSION)
      throw badInput(`"version" ${String(value.version)} is not one this server reads (${EXPORT_VERSION}).`);
    return value as unknown as HeaderLine;
  }
  if (typeof type !== 'string' || !(type in FIELDS)) {
    throw badInput(`"type" must be one of header, ${Object.keys(FIELDS).join(', ')}.`);
  }
  for (const [key, kind] of FIELDS[type as keyof typeof FIELDS]) checkField(value, key, kind);
  switch (type) {
    case 'session':
      checkEnum(value, 'kind', ['ROOT', 'FORK', 'SUB_AGENT']);
      if (!Array.isArray(value.lineage) || !value.lineage.every(isLineageEntry)) {
        throw badInput('"lineage" must be an array of { sessionId, start, end, compactions, transforms }.');
      }
      if (!isObject(value.settings) || !isObject(value.metadata)) throw badInput('"settings" and "metadata" must be JSON objects.');
      break;
    case 'turn':
      checkEnum(value, 'status', STATUSES);
      checkEnum(value, 'initiatorKind', ['USER', 'EXTENSION', 'SYSTEM']);
      if (!Array.isArray(value.agents) || value.agents.length > 1000) throw badInput('"agents" must be an array (at most 1000).');
      for (const agent of value.agents) {
        if (!isObject(agent)) throw badInput('each of "agents" must be an object.');
        for (const [key, kind] of [['agentId', 'string'], ['error', 'string?'], ['completedAt', 'date?'], ...USAGE] as [string, Kind][]) {
          checkField(agent, key, kind);
        }
        checkEnum(agent, 'status', STATUSES);
      }
      break;
    case 'usage':
      checkEnum(value, 'costSource', ['REPORTED', 'CATALOG', 'UNKNOWN']);
      break;
    case 'attachment':
      checkEnum(value, 'kind', ['TEXT', 'BYTES', 'URL', 'PROVIDER_FILE']);
      break;
    case 'message':
      checkEnum(value, 'role', ['SYSTEM', 'USER', 'ASSISTANT', 'TOOL']);
      if (!Array.isArray(value.parts) || value.parts.length > LIMITS.partsPerMessage || !value.parts.every(isObject)) {
        throw badInput(`"parts" must be an array of at most ${LIMITS.partsPerMessage} objects.`);
      }
      checkStoredParts(value.parts as Record<string, unknown>[]);
      break;
    case 'transform':
      checkEnum(value, 'kind', ['HIDE', 'UNHIDE', 'REDACT', 'UNREDACT', 'STRIP_TOOL_OUTPUTS']);
      break;
  }
  return value as unknown as ExportLine;
}

function isLineageEntry(entry: unknown): boolean {
  if (!isObject(entry) || typeof entry.sessionId !== 'string') return false;
  const ints = [entry.start, entry.end, entry.compactions, entry.transforms ?? 0];
  return ints.every((n) => Number.isSafeInteger(n) && (n as number) >= 0);
}
