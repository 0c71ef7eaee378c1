import { badInput } from '../domain/errors.js';
import { draftMessage, type DraftMessage, type MessageInputData } from '../domain/parts.js';
import { LIMITS, type TextCaps } from '../domain/limits.js';
import type { Prisma } from '../generated/prisma/client.js';

/** The checks of a session write's arguments, made before any transaction begins. */

/** What a multipart upload gives a resolver (Yoga's `File`, a ponyfill on Node 20: read it with `arrayBuffer`). */
interface UploadedFile {
  size: number;
  arrayBuffer(): Promise<ArrayBuffer>;
}

const isUpload = (value: unknown): value is UploadedFile =>
  typeof value === 'object' && value !== null && typeof (value as UploadedFile).arrayBuffer === 'function';

/**
 * The messages with every attachment `upload` read into `bytes`, so the checks that follow are
 * synchronous. A file over the cap is refused before it is read (Yoga's multipart limit has
 * already refused one streaming past it; this holds for any other source of a `File`).
 */
export async function readUploads(
  inputs: MessageInputData[],
  caps: TextCaps,
  label: (index: number) => string = (i) => `messages[${i}]`,
): Promise<MessageInputData[]> {
  if (!inputs.some((input) => input.parts?.some((part) => part.attachment?.upload != null))) return inputs;
  return Promise.all(
    inputs.map(async (input, i) => {
      if (!input.parts?.some((part) => part.attachment?.upload != null)) return input;
      const parts = await Promise.all(
        input.parts.map(async (part, k) => {
          const upload = part.attachment?.upload;
          if (upload === undefined || upload === null) return part;
          const where = `${label(i)}.parts[${k}].attachment.upload`;
          if (!isUpload(upload)) throw badInput(`${where} must be a file of a multipart request.`);
          if (upload.size > caps.fileBytes) {
            throw badInput(`${where} is ${upload.size} bytes, more than ${caps.fileBytes}, the cap on this server; nothing was stored.`);
          }
          return { ...part, attachment: { ...part.attachment!, bytes: new Uint8Array(await upload.arrayBuffer()) } };
        }),
      );
      return { ...input, parts };
    }),
  );
}

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
