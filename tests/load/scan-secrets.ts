/**
 * After a load run: no session token, raw external user id, prompt text, admin token or webhook
 * secret in the stack's captured log lines or in any column of any table (every row as JSON, minus
 * the encrypted provider-key column).
 */
import pg from 'pg';
import type { LoadResult } from './load-run.ts';

export interface Needle {
  name: string;
  value: string;
}

export function needlesOf(result: LoadResult, adminToken: string, webhookSecret: string): Needle[] {
  return [
    ...result.secrets.sessionTokens.map((token) => ({ name: 'session token', value: token.slice(4) })),
    ...result.secrets.externalUserIds.map((id) => ({ name: 'raw external user id', value: id })),
    { name: 'prompt text', value: result.secrets.promptMarker },
    { name: 'admin token', value: adminToken },
    { name: 'webhook secret', value: webhookSecret },
  ];
}

export function findLeaks(place: string, texts: string[], needles: Needle[]): string[] {
  const leaks: string[] = [];
  for (const text of texts) {
    for (const needle of needles) if (text.includes(needle.value)) leaks.push(`${needle.name} in ${place}: ${text.slice(0, 200)}`);
  }
  return leaks;
}

export async function scanDatabase(databaseUrl: string, needles: Needle[]): Promise<string[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows: tables } = await client.query<{ table_name: string }>(
      `select table_name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE' order by 1`,
    );
    const leaks: string[] = [];
    for (const { table_name } of tables) {
      const { rows } = await client.query<{ row: string }>(`select (to_jsonb(t) - 'ciphertext')::text as row from "${table_name}" t`);
      leaks.push(
        ...findLeaks(
          `table ${table_name}`,
          rows.map((row) => row.row),
          needles,
        ),
      );
    }
    return leaks;
  } finally {
    await client.end();
  }
}
