import type { Compaction as CompactionRow } from '../generated/prisma/client.js';
import { builder } from './builder.js';
import { Session } from './refs.js';

export const Compaction = builder.objectRef<CompactionRow>('Compaction').implement({
  description:
    'A compaction (compactSession): from its creation on, assembleContext replaces messages [0, uptoIndex) by its summary block, the summary text followed by the extracted context as one JSON section.',
  fields: (t) => ({
    uptoIndex: t.exposeInt('uptoIndex', { description: 'Messages [0, uptoIndex) are replaced by the summary.' }),
    summary: t.exposeString('summary', { description: 'The summary text, as given.' }),
    extractedContext: t.field({
      type: 'JSON',
      nullable: true,
      description:
        'The structured context given with the summary (a JSON object: decisions, files, open tasks …), or null. Assembled after the summary text as `<extracted_context>{…}</extracted_context>`: keys sorted, <, > and & escaped as in the turn context, counted like the rest of the block.',
      resolve: (c) => c.extractedContext ?? null,
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When it was made.' }),
    session: t.field({
      type: Session,
      nullable: true,
      description: 'The session it was made in: this session, or the ancestor a fork inherits it from.',
      resolve: (c, _, ctx) => ctx.loaders.sessionById.load(c.sessionId),
    }),
  }),
});

builder.prismaObjectField(Session, 'compaction', (t) =>
  t.field({
    type: Compaction,
    nullable: true,
    description:
      'The compaction assembleContext applies to this session: its own latest, else the latest a fork inherits (made in an ancestor before the fork, ending at or before the cut). Null when none applies.',
    select: { lineage: true },
    resolve: (session, _, ctx) => ctx.sessions.applicableCompaction(session),
  }),
);
