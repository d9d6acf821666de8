import { sql as drizzleSql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { createHttpDatabase } from '#shared/db.ts';
import { createTestEnv, sql } from '../../test/harness.ts';

describe('createHttpDatabase', () => {
  it("reads timestamps as text through its own client and leaves the driver's process-wide parsers alone", async () => {
    const testEnv = await createTestEnv();
    const query = `select timestamptz '2025-01-02 03:04:05+00' as at`;
    const expected = new Date('2025-01-02T03:04:05Z');
    const [before] = await sql<{ at: unknown }>(testEnv, query);
    expect(before!.at).toEqual(expected);

    const { rows } = await createHttpDatabase(testEnv).execute(drizzleSql.raw(query));
    expect(rows).toEqual([{ at: expect.any(String) }]);

    // Drizzle's HTTP driver sets these parsers process-wide; every other client must still read a Date.
    const [after] = await sql<{ at: unknown }>(testEnv, query);
    expect(after!.at).toEqual(expected);
  });
});
