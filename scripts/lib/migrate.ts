/**
 * Applies `migrations/NNNN_*.sql` in order, once each, recording name and checksum (forward-only:
 * tables and data), then `migrations/functions/*.sql`, each the one current definition of a SQL
 * function, re-applied whenever its checksum changed (repeatable, as Flyway's `R__` files).
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type pg from 'pg';

export const migrationsDir = join(import.meta.dirname, '..', '..', 'migrations');

export interface Migration {
  name: string;
  sql: string;
  checksum: string;
}

/** The repeatable function files, applied in name order after every numbered migration. */
export function readFunctionFiles(dir = join(migrationsDir, 'functions')): Migration[] {
  return readdirSync(dir)
    .filter((file) => /^[a-z0-9_]+\.sql$/.test(file))
    .sort()
    .map((file) => {
      const sql = readFileSync(join(dir, file), 'utf8');
      return { name: `functions/${file}`, sql, checksum: createHash('sha256').update(sql).digest('hex') };
    });
}

export function readMigrations(dir = migrationsDir): Migration[] {
  return readdirSync(dir)
    .filter((file) => /^\d{4}_[a-z0-9_]+\.sql$/.test(file))
    .sort()
    .map((name) => {
      const sql = readFileSync(join(dir, name), 'utf8');
      return { name, sql, checksum: createHash('sha256').update(sql).digest('hex') };
    });
}

/** Returns the names applied by this run (empty when the database was already current). */
export async function migrate(client: pg.Client, migrations = readMigrations(), functions = readFunctionFiles()): Promise<string[]> {
  await client.query(`create table if not exists schema_migrations (
    name text primary key, checksum text not null, applied_at timestamptz not null default now())`);
  // One runner at a time, also across processes.
  await client.query('select pg_advisory_lock(727274)');
  try {
    const { rows } = await client.query<{ name: string; checksum: string }>('select name, checksum from schema_migrations');
    const applied = new Map(rows.map((row) => [row.name, row.checksum]));
    const ran: string[] = [];
    for (const migration of migrations) {
      const known = applied.get(migration.name);
      if (known === migration.checksum) continue;
      if (known) throw new Error(`migration ${migration.name} changed after it was applied; add a new migration instead`);
      await client.query('begin');
      try {
        await client.query(migration.sql);
        await client.query('insert into schema_migrations (name, checksum) values ($1, $2)', [migration.name, migration.checksum]);
        await client.query('commit');
      } catch (error) {
        await client.query('rollback');
        throw new Error(`migration ${migration.name} failed: ${(error as Error).message}`);
      }
      ran.push(migration.name);
    }
    // One transaction for all changed function files: they may call one another.
    const changed = functions.filter((file) => applied.get(file.name) !== file.checksum);
    if (changed.length > 0) {
      await client.query('begin');
      try {
        for (const file of changed) {
          await client.query(file.sql);
          await client.query(
            `insert into schema_migrations (name, checksum) values ($1, $2)
             on conflict (name) do update set checksum = excluded.checksum, applied_at = now()`,
            [file.name, file.checksum],
          );
        }
        await client.query('commit');
      } catch (error) {
        await client.query('rollback');
        throw new Error(`function files failed: ${(error as Error).message}`);
      }
      ran.push(...changed.map((file) => file.name));
    }
    return ran;
  } finally {
    await client.query('select pg_advisory_unlock(727274)');
  }
}
