import { badInput } from '../domain/errors.js';
import { draftMessage, type DraftMessage, type MessageInputData } from '../domain/parts.js';
import { LIMITS, type TextCaps } from '../domain/limits.js';
import type { Prisma } from '../generated/prisma/client.js';

/** The checks of a session write's arguments, made before any transaction begins. */

export function draftBatch(inputs: MessageInputData[], allowEmpty: boolean, caps: TextCaps): DraftMessage[] {
  if (!allowEmpty && inputs.length === 0) throw badInput('messages must not be empty.');
  if (inputs.length > LIMITS.messagesPerCall) throw badInput(`At most ${LIMITS.messagesPerCall} messages per call.`);
  return inputs.map((input, i) => draftMessage(input, `messages[${i}]`, caps));
}

export function checkTitle(title: string): string {
  if (title.length > LIMITS.titleChars) throw badInput(`title is longer than ${LIMITS.titleChars} characters.`);
  return title;
}

export function jsonObject(value: unknown, name: string): Prisma.InputJsonObject {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw badInput(`${name} must be a JSON object.`);
  }
  return value as Prisma.InputJsonObject;
}
