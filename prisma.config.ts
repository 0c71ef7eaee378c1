// Configuration for the Prisma CLI (generate). The server itself never reads this file:
// it builds its client from the driver adapter chosen by src/config.ts.
import { defineConfig } from 'prisma/config';

export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
});
