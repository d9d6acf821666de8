/**
 * One row type for a view that is both read with the query builder and returned by a write that
 * must stay one `sql` statement (a RETURNING CTE with its audit row, docs/architecture.md "Data
 * access"). The view declares its selection once, from the columns of drizzle/schema.ts: a read
 * passes it to `db.select()`, a write to `querySelection`, which hands the statement its select
 * list and decodes each value the way the builder does (timestamps to `Date`, …). Both give
 * `SelectionRow<typeof selection>`; nobody writes the row type by hand.
 */
import { Column, type GetColumnData, is, type SQL, sql } from 'drizzle-orm';
import { type SqlDatabase, queryRows } from '../query.ts';

/**
 * Columns of drizzle/schema.ts (of a table or an alias of it), or typed `sql` expressions that
 * yield text (both paths return those as the driver gives them: no `mapWith` here).
 */
export type Selection = Record<string, Column | SQL<unknown>>;

/** The row the query builder returns for `S`. */
export type SelectionRow<S extends Selection> = {
  [K in keyof S]: S[K] extends Column ? GetColumnData<S[K]> : S[K] extends SQL<infer T> ? T : never;
};

/** `<field> as "<key>", …`: the select list giving `selection`'s keys as column names. */
function selectListSql(selection: Selection): SQL {
  return sql.join(
    Object.entries(selection).map(([key, field]) => sql`${field} as ${sql.identifier(key)}`),
    sql`, `,
  );
}

function decode(field: Column | SQL<unknown>, value: unknown): unknown {
  return value === null || !is(field, Column) ? value : field.mapFromDriverValue(value);
}

/**
 * Runs the statement `query` builds around the select list of `selection` (its final select) and
 * decodes its rows as the builder would.
 */
export async function querySelection<S extends Selection>(
  db: SqlDatabase,
  selection: S,
  query: (selectList: SQL) => SQL,
): Promise<SelectionRow<S>[]> {
  const rows = await queryRows<Record<string, unknown>>(db, query(selectListSql(selection)));
  return rows.map(
    (row) => Object.fromEntries(Object.entries(selection).map(([key, field]) => [key, decode(field, row[key])])) as SelectionRow<S>,
  );
}
