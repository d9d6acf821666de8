import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, createTestEnv, demoFixture, type TestEnv } from '../../test/harness.ts';
import type { Database } from '../db.ts';
import { createDeveloperKey } from '../developers/create-developer-key.ts';
import { listDeveloperKeys } from '../developers/list-developer-keys.ts';
import { revokeDeveloperKey } from '../developers/revoke-developer-key.ts';

let testEnv: TestEnv;
let database: Database;
let developerId: string;
const actor = { type: 'system', id: null } as const;

beforeAll(async () => {
  testEnv = await createTestEnv();
  database = createDatabase(testEnv);
  developerId = (await demoFixture(testEnv)).developer_id;
});
afterAll(() => database.pool.end());

describe('querySelection', () => {
  it('returns a write’s row exactly as the builder reads it: same keys, timestamps as Date, nulls kept', async () => {
    const { row: created } = await createDeveloperKey(database.db, { developerId, label: null, actor, requestId: null });
    const listed = (await listDeveloperKeys(database.db, developerId)).find((row) => row.id === created.id);
    expect(created).toEqual(listed);
    expect(created.createdAt).toBeInstanceOf(Date);
    expect(created.revokedAt).toBeNull();
    expect(Object.keys(created)).toEqual(['id', 'prefix', 'label', 'createdAt', 'lastUsedAt', 'revokedAt']);
  });

  it('decodes a timestamp the write set (the union branch of an idempotent write included)', async () => {
    const { row } = await createDeveloperKey(database.db, { developerId, label: 'to revoke', actor, requestId: null });
    const input = { developerId, keyId: row.id, actor, requestId: null };
    const revoked = await revokeDeveloperKey(database.db, input);
    const again = await revokeDeveloperKey(database.db, input);
    expect(revoked.revokedAt).toBeInstanceOf(Date);
    expect(again).toEqual(revoked);
    expect((await listDeveloperKeys(database.db, developerId)).find((key) => key.id === row.id)).toEqual(revoked);
  });
});
