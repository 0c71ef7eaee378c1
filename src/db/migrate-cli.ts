// `npm run db:migrate`: applies pending migrations to the configured database and exits.
import { loadConfig } from '../config.js';
import { createDatabase, databaseOptionsOf } from './database.js';

const config = loadConfig();
const db = await createDatabase(databaseOptionsOf(config));
try {
  const report = await db.migrate();
  console.log(
    report.applied.length
      ? `Applied ${report.applied.length} migration(s) to ${db.description}: ${report.applied.join(', ')}`
      : `${db.description} is up to date (${report.alreadyApplied} migration(s) applied).`,
  );
} catch (error) {
  console.error((error as Error).message);
  process.exitCode = 1;
} finally {
  await db.close();
}
