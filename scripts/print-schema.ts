// Prints the GraphQL schema to schema.graphql (`npm run schema:print`); a test fails when they differ.
import { writeFileSync } from 'node:fs';
import { printSchema } from 'graphql';
import { schema } from '../src/schema/index.js';

export const SCHEMA_FILE = new URL('../schema.graphql', import.meta.url);

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop()!)) {
  writeFileSync(SCHEMA_FILE, printSchema(schema) + '\n');
  console.log('wrote schema.graphql');
}
