import { getTableConfig, type PgTable } from 'drizzle-orm/pg-core';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { migrate, readFunctionFiles, readMigrations } from '../scripts/lib/migrate.ts';
import { ensureDatabase, withClient } from '../scripts/lib/postgres.ts';
import * as schema from './schema.ts';

const stack = inject('stack');
const databaseName = `schema_${Date.now()}_${Math.floor(Math.random() * 1e6)}`;
const databaseUrl = stack.postgresAdminUrl.replace(/\/postgres$/, `/${databaseName}`);

const tables = (Object.values(schema) as unknown[]).filter(
  (value): value is PgTable => typeof value === 'object' && value !== null && Symbol.for('drizzle:IsDrizzleTable') in value,
);

/** information_schema's spelling of a Drizzle SQL type. */
function normaliseType(sqlType: string): string {
  return sqlType
    .replace(/^timestamp with time zone$/, 'timestamptz')
    .replace(/^character\((\d+)\)$/, 'char($1)')
    .replace(/\s+/g, '');
}

interface ColumnRow {
  table_name: string;
  column_name: string;
  data_type: string;
  udt_name: string;
  is_nullable: 'YES' | 'NO';
  numeric_precision: number | null;
  numeric_scale: number | null;
  character_maximum_length: number | null;
}

function databaseType(row: ColumnRow): string {
  switch (row.udt_name) {
    case 'numeric':
      return `numeric(${row.numeric_precision},${row.numeric_scale})`;
    case 'bpchar':
      return `char(${row.character_maximum_length})`;
    case 'int4':
      return 'integer';
    case 'int8':
      return 'bigint';
    case '_int8':
      return 'bigint[]';
    case '_numeric':
      return 'numeric[]';
    case '_text':
      return 'text[]';
    case 'bool':
      return 'boolean';
    default:
      return row.udt_name;
  }
}

async function describeDatabase() {
  return withClient(databaseUrl, async (client) => {
    const { rows } = await client.query<ColumnRow>(
      `select table_name, column_name, data_type, udt_name, is_nullable, numeric_precision, numeric_scale,
              character_maximum_length
         from information_schema.columns where table_schema = 'public' order by table_name, column_name`,
    );
    const indexes = await client.query(`select indexname, indexdef from pg_indexes where schemaname = 'public' order by 1`);
    const constraints = await client.query(
      `select conname, pg_get_constraintdef(oid) as definition from pg_constraint
        where connamespace = 'public'::regnamespace order by 1`,
    );
    return { columns: rows, indexes: indexes.rows, constraints: constraints.rows };
  });
}

beforeAll(async () => {
  await ensureDatabase(stack.postgresAdminUrl, databaseName);
  await withClient(databaseUrl, (client) => migrate(client));
});

describe('migrations', () => {
  it('record what they applied, and a second run applies nothing', async () => {
    const applied = await withClient(databaseUrl, async (client) => {
      const { rows } = await client.query<{ name: string }>('select name from schema_migrations order by name');
      return rows.map((row) => row.name);
    });
    expect(applied).toEqual([...readMigrations(), ...readFunctionFiles()].map((migration) => migration.name).sort());
    expect(await withClient(databaseUrl, (client) => migrate(client))).toEqual([]);
  });

  it('re-apply a function file whose text changed, and only that one', async () => {
    const files = readFunctionFiles();
    const target = files.find((file) => file.name === 'functions/faucet_month_start.sql')!;
    const changed = {
      ...target,
      sql: `${target.sql}\ncomment on function faucet_month_start(timestamptz) is 'changed';\n`,
      checksum: 'changed',
    };
    const ran = await withClient(databaseUrl, (client) =>
      migrate(
        client,
        readMigrations(),
        files.map((file) => (file === target ? changed : file)),
      ),
    );
    expect(ran).toEqual(['functions/faucet_month_start.sql']);
    const comment = await withClient(databaseUrl, async (client) => {
      const { rows } = await client.query<{ comment: string }>(
        `select obj_description('faucet_month_start(timestamptz)'::regprocedure) as comment`,
      );
      return rows[0]?.comment;
    });
    expect(comment).toBe('changed');
    expect(await withClient(databaseUrl, (client) => migrate(client))).toEqual(['functions/faucet_month_start.sql']);
  });

  it('are idempotent: executing every file again changes nothing', async () => {
    const before = await describeDatabase();
    await withClient(databaseUrl, async (client) => {
      for (const migration of readMigrations()) await client.query(migration.sql);
    });
    expect(await describeDatabase()).toEqual(before);
  });

  it('refuse a migration edited after it was applied', async () => {
    const [first, ...rest] = readMigrations();
    const edited = [{ ...first!, checksum: 'different' }, ...rest];
    await expect(withClient(databaseUrl, (client) => migrate(client, edited))).rejects.toThrow(/changed after it was applied/);
  });
});

describe('Drizzle schema and migrated database', () => {
  it('have the same tables, columns, types and nullability', async () => {
    const { columns } = await describeDatabase();
    const fromDatabase = columns.map((row) => ({
      table: row.table_name,
      column: row.column_name,
      type: databaseType(row),
      notNull: row.is_nullable === 'NO',
    }));
    const fromDrizzle = tables.flatMap((table) => {
      const config = getTableConfig(table);
      return config.columns.map((column) => ({
        table: config.name,
        column: column.name,
        type: normaliseType(column.getSQLType()).replace('bigserial', 'bigint'),
        notNull: column.notNull,
      }));
    });
    const order = (rows: typeof fromDatabase) => [...rows].sort((a, b) => `${a.table}.${a.column}`.localeCompare(`${b.table}.${b.column}`));
    expect(order(fromDrizzle)).toEqual(order(fromDatabase));
  });
});
