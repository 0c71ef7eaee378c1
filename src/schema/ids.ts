import { decodeGlobalID, encodeGlobalID } from '../packages.js';
import { badInput, notFound } from '../errors.js';
import { UUID_PATTERN } from '../db/ids.js';

export type NodeTypeName = 'Session' | 'Message' | 'Turn' | 'Attachment';

/**
 * Decodes an opaque global ID of the expected type. A string that is no global ID at all is bad
 * input; a well-formed ID of another type, or one that cannot exist, is simply not found.
 */
export function parseGlobalId(raw: string, expected: NodeTypeName, argument: string): string {
  let decoded: { typename: string; id: string };
  try {
    decoded = decodeGlobalID(raw);
  } catch {
    throw badInput(`${argument} "${truncate(raw)}" is not a valid ${expected} ID.`);
  }
  if (!decoded.typename || !decoded.id) throw badInput(`${argument} "${truncate(raw)}" is not a valid ${expected} ID.`);
  if (decoded.typename !== expected || !UUID_PATTERN.test(decoded.id)) throw notFound(expected, raw);
  return decoded.id;
}

export const toGlobalId = (typename: NodeTypeName, id: string) => encodeGlobalID(typename, id);

const truncate = (s: string) => (s.length > 80 ? `${s.slice(0, 77)}...` : s);
