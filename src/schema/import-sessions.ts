import type { Session as SessionRow } from '../generated/prisma/client.js';
import { LineError } from '../domain/export-format.js';
import { badInput } from '../graphql/errors.js';
import { builder } from './builder.js';
import { Session } from './refs.js';

const ImportSessionsInput = builder.inputType('ImportSessionsInput', {
  description: 'Sessions to import, in the export format (docs/export-format.md).',
  fields: (t) => ({
    lines: t.string({
      required: true,
      description:
        'The JSON Lines of an export (GET /export/sessions/<id>), within the string cap: larger files go to POST /import, which streams them.',
    }),
  }),
});

const ImportSessionsPayload = builder.objectRef<{ sessions: SessionRow[] }>('ImportSessionsPayload').implement({
  description: 'The sessions imported.',
  fields: (t) => ({
    sessions: t.field({
      type: [Session],
      description: "Every session imported, new ids, in the file's order (parents before their forks).",
      resolve: (p) => p.sessions,
    }),
  }),
});

builder.mutationField('importSessions', (t) =>
  t.field({
    type: ImportSessionsPayload,
    description:
      'Imports export lines as new sessions of your workspace: new ids, the same structure, timestamps kept, all in one transaction. A line that cannot be read is refused (BAD_USER_INPUT with extensions.line) and nothing is stored.',
    args: { input: t.arg({ type: ImportSessionsInput, required: true }) },
    resolve: async (_, { input }, ctx) => {
      try {
        return { sessions: await ctx.imports.importSessions(ctx.workspaceId, input.lines) };
      } catch (error) {
        if (error instanceof LineError) throw badInput(`Line ${error.line}: ${error.message}`, { line: error.line });
        throw error;
      }
    },
  }),
);
