import { encodeGlobalID } from '@pothos/plugin-relay';

/** The node types a client can hold an ID of. */
export type NodeTypeName = 'Session' | 'Message' | 'Turn' | 'Attachment';

/**
 * The opaque ID a client sees for a row (the relay plugin's encoding of the type name and the raw
 * id): what refusals name when the client never gave the ID itself (a sub-session found in a
 * timeline). The schema's node IDs are the same encoding.
 */
export const toGlobalId = (typename: NodeTypeName, id: string): string => encodeGlobalID(typename, id);
