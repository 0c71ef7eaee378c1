/**
 * Column lists checked against the generated Prisma model types, so that a column added to
 * `prisma/schema.prisma` breaks `tsc` at every hand-written statement that writes or decodes its
 * table until that statement handles it (test/integration/store-columns.test.ts checks the same
 * lists against the migrated database).
 */

/** A column left to its database default in an INSERT, on purpose. */
export const DEFAULT = Symbol('DEFAULT');

/** One SQL value expression (or DEFAULT) for every column of `Row`: a missing column is a type error. */
export type InsertValues<Row> = { readonly [K in keyof Row]-?: string | typeof DEFAULT };

/** Every column of `Row`, each marked: a missing column is a type error. */
export type ColumnSet<Row> = { readonly [K in keyof Row]-?: true };

/** A hand-written INSERT: the table and, per column, the value it writes or DEFAULT. */
export interface InsertShape<Row> {
  table: string;
  values: InsertValues<Row>;
}

const quote = (column: string) => `"${column}"`;

/** `"a", "b", …` for the columns of a ColumnSet, in declaration order. */
export function columnList<Row>(columns: ColumnSet<Row>, alias?: string): string {
  return Object.keys(columns)
    .map((c) => (alias ? `${alias}.${quote(c)}` : quote(c)))
    .join(', ');
}

/** The columns an InsertShape writes, with their values (DEFAULT columns left out). */
function written<Row>(shape: InsertShape<Row>): [string, string][] {
  return Object.entries(shape.values as Record<string, string | typeof DEFAULT>).filter(
    (entry): entry is [string, string] => entry[1] !== DEFAULT,
  );
}

/** `INSERT INTO "table" (…) VALUES (…)` from an InsertShape, leaving DEFAULT columns out. */
export function insertSql<Row>(shape: InsertShape<Row>): string {
  const entries = written(shape);
  return `INSERT INTO ${quote(shape.table)} (${entries.map(([c]) => quote(c)).join(', ')}) VALUES (${entries.map(([, v]) => v).join(', ')})`;
}

/**
 * `INSERT INTO "table" (…) SELECT … <from>` from an InsertShape, leaving DEFAULT columns out: for
 * rows written from a query (`from` holds its FROM, WHERE and any ON CONFLICT or RETURNING).
 */
export function insertSelectSql<Row>(shape: InsertShape<Row>, from: string): string {
  const entries = written(shape);
  return `INSERT INTO ${quote(shape.table)} (${entries.map(([c]) => quote(c)).join(', ')})
     SELECT ${entries.map(([, v]) => v).join(', ')}
     ${from}`;
}
