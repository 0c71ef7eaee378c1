/**
 * Options check: every refusal is BAD_USER_INPUT with a message saying what to send instead.
 * Runs before anything else, so bad input never costs work.
 */
import { badInput } from '../errors.js';
import type { TokenEncoding } from '../types.js';
import {
  ATTACHMENT_MODES,
  CACHE_STRATEGIES,
  CONTEXT_FORMATS,
  TOKEN_ENCODINGS,
  type AssembleContextOptions,
  type ContextFormat,
} from './types.js';
import { isPlainObject } from './turn-context.js';

const bad = (field: string, message: string) => badInput(message, { field });

function checkInteger(field: string, value: unknown, min: number, nullable: boolean): void {
  if (value === null && nullable) return;
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    throw bad(field, `${field} must be an integer${nullable ? ' or null' : ''}, got ${JSON.stringify(value) ?? String(value)}.`);
  }
  if (value < min) {
    throw bad(field, `${field} must be at least ${min}, got ${value}.`);
  }
}

export function validateAssembleOptions(options: AssembleContextOptions): AssembleContextOptions {
  checkInteger('maxTokens', options.maxTokens, 1, true);
  checkInteger('maxMessages', options.maxMessages, 1, true);
  checkInteger('keepToolCallRounds', options.keepToolCallRounds, 0, false);
  checkInteger('attachmentMaxChars', options.attachmentMaxChars, 0, false);
  checkInteger('contextAttachmentMaxChars', options.contextAttachmentMaxChars, 0, false);
  if (!TOKEN_ENCODINGS.includes(options.encoding as TokenEncoding)) {
    throw bad('encoding', `encoding must be one of ${TOKEN_ENCODINGS.join(', ')}, got ${JSON.stringify(options.encoding)}.`);
  }
  if (!CONTEXT_FORMATS.includes(options.format as ContextFormat)) {
    throw bad('format', `format must be one of ${CONTEXT_FORMATS.join(', ')}, got ${JSON.stringify(options.format)}.`);
  }
  if (options.keepSystemMessage !== undefined && typeof options.keepSystemMessage !== 'boolean') {
    throw bad('keepSystemMessage', 'keepSystemMessage must be true or false.');
  }
  if (options.attachmentMode !== undefined && !ATTACHMENT_MODES.includes(options.attachmentMode)) {
    throw bad(
      'attachmentMode',
      `attachmentMode must be one of ${ATTACHMENT_MODES.join(', ')}, got ${JSON.stringify(options.attachmentMode)}.`,
    );
  }
  if (options.includeAttachmentTool !== undefined && typeof options.includeAttachmentTool !== 'boolean') {
    throw bad('includeAttachmentTool', 'includeAttachmentTool must be true or false.');
  }
  if (options.cacheStrategy !== undefined && !CACHE_STRATEGIES.includes(options.cacheStrategy)) {
    throw bad(
      'cacheStrategy',
      `cacheStrategy must be one of ${CACHE_STRATEGIES.join(', ')}, got ${JSON.stringify(options.cacheStrategy)}.`,
    );
  }
  if (options.cacheSlack !== undefined) {
    const slack = options.cacheSlack;
    if (typeof slack !== 'number' || !Number.isFinite(slack) || slack < 0 || slack >= 1) {
      throw bad(
        'cacheSlack',
        `cacheSlack must be a number from 0 up to (not including) 1, the share of maxTokens left free when the budget binds (0.3 drops down to 70% of maxTokens), got ${JSON.stringify(slack) ?? String(slack)}.`,
      );
    }
  }
  if (options.system !== null && typeof options.system !== 'string') {
    throw bad('system', 'system must be a string or null.');
  }
  if (options.turnContext !== null && !isPlainObject(options.turnContext)) {
    throw bad('turnContext', 'turnContext must be a JSON object (like {"cwd": "/repo"}) or null.');
  }
  return options;
}
