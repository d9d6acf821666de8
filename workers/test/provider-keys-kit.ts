/**
 * Helpers for the provider-keys tests: realistic fake keys, a second developer (another tenant),
 * the key endpoints, and a record of every response body so leak checks can search them all.
 */
import { randomToken, sha256Hex } from '#shared/crypto.ts';
import { api, call, sql, type TestEnv } from './harness.ts';

/** A well-formed, unique fake OpenAI project key (never a real one). */
export function fakeOpenAiKey(): string {
  return `sk-proj-${randomToken('', 30).replace(/[^A-Za-z0-9]/g, 'x')}`;
}

export function fakeAnthropicKey(): string {
  return `sk-ant-api03-${randomToken('', 30).replace(/[^A-Za-z0-9]/g, 'x')}`;
}

/** Every response body seen through `send`, for the leak search. */
export const seenBodies: string[] = [];

export async function send(testEnv: TestEnv, path: string, options: Parameters<typeof call>[3] = {}, app = api()) {
  const response = await call(app, testEnv, path, options);
  const text = await response.text();
  seenBodies.push(text);
  const isJson = response.headers.get('content-type')?.includes('application/json') ?? false;
  return { status: response.status, headers: response.headers, text, body: isJson ? (JSON.parse(text) as any) : undefined };
}

/** Another developer with their own `fdk_` key: a second tenant. */
export async function createDeveloper(testEnv: TestEnv): Promise<{ developerId: string; key: string }> {
  const key = randomToken('fdk_');
  const [row] = await sql<{ id: string }>(
    testEnv,
    `with d as (insert into developers (name, email) values ('Other', $1) returning id),
     k as (insert into developer_keys (developer_id, key_hash, prefix) select id, $2, $3 from d)
     select id from d`,
    [`other-${crypto.randomUUID()}@example.com`, await sha256Hex(key), key.slice(0, 8)],
  );
  return { developerId: row!.id, key };
}

export async function auditRows(testEnv: TestEnv, targetId?: string) {
  return sql<{
    actor_type: string;
    actor_id: string | null;
    action: string;
    target_type: string;
    target_id: string;
    request_id: string | null;
    metadata: unknown;
    created_at: Date;
  }>(
    testEnv,
    `select actor_type, actor_id, action, target_type, target_id, request_id, metadata, created_at from audit_logs
      where target_type = 'provider_credential' and ($1::text is null or target_id = $1) order by id`,
    [targetId ?? null],
  );
}

/** Every text value of every table in the database, one string per row (for "the key is nowhere" checks). */
export async function dumpAllTables(testEnv: TestEnv): Promise<Map<string, string[]>> {
  const tables = await sql<{ table_name: string }>(
    testEnv,
    `select table_name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE' order by 1`,
  );
  const dump = new Map<string, string[]>();
  for (const { table_name } of tables) {
    const rows = await sql<{ text: string }>(testEnv, `select t::text as text from "${table_name}" t`);
    dump.set(
      table_name,
      rows.map((row) => row.text),
    );
  }
  return dump;
}
