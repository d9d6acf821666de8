/**
 * An app's trace export (docs/traces.md): the OTLP/HTTP endpoint its calls' spans go to and the
 * headers sent with them. The headers are sealed as provider keys are (same helpers, same keyring;
 * the app's id is the additional data) and shown only masked; the endpoint is checked by the
 * outbound fetch's address guard here and again on every delivery.
 */
import { eq, sql } from 'drizzle-orm';
import { appTraceExports } from '../../../drizzle/schema.ts';
import type { Db } from '../db.ts';
import type { Env } from '../env.ts';
import { type Keyring, keyringFrom } from '../provider-keys/keyring.ts';
import { openKey, type SealContext, type SealedKey, sealKey } from '../provider-keys/seal.ts';
import { queryRows, type SqlDatabase } from '../query.ts';
import { publicEndpointUrl } from '../upstream/public-endpoint.ts';

export type TraceExportRow = typeof appTraceExports.$inferSelect;

/** What a ciphertext of headers is bound to: its app's row (never a provider key's). */
const sealContext = (appId: string): SealContext => ({ credentialId: appId, provider: 'otlp_trace_headers' });

/** The endpoint to store, or a 400 saying why not (upstream/public-endpoint.ts). */
export function traceEndpointFor(endpoint: string, env: Env): string {
  return publicEndpointUrl(endpoint, env, 'endpoint');
}

/** `...` and the last four characters of a long value; a short one is not shown at all. */
export function maskHeaderValue(value: string): string {
  return value.length >= 12 ? `...${value.slice(-4)}` : '...';
}

/** Stores (or replaces) the app's export, enabled, its delivery history reset. */
export async function saveTraceExport(
  db: Db,
  env: Env,
  input: { appId: string; endpoint: string; headers: Record<string, string>; enabled: boolean },
): Promise<TraceExportRow> {
  const names = Object.keys(input.headers);
  const sealed =
    names.length === 0
      ? null
      : await sealKey(await keyringFrom(env.PROVIDER_KEY_ENCRYPTION_KEY), JSON.stringify(input.headers), sealContext(input.appId));
  const masked = Object.fromEntries(names.map((name) => [name, maskHeaderValue(input.headers[name]!)]));
  const values = {
    endpoint: input.endpoint,
    headersCiphertext: sealed?.ciphertext ?? null,
    headersIv: sealed?.iv ?? null,
    headersKeyVersion: sealed?.keyVersion ?? null,
    headersMasked: masked,
    enabled: input.enabled,
    updatedAt: sql`now()`,
    lastSuccessAt: null,
    lastErrorAt: null,
    lastError: null,
    consecutiveFailures: 0,
  };
  const [row] = await db
    .insert(appTraceExports)
    .values({ appId: input.appId, ...values })
    .onConflictDoUpdate({ target: appTraceExports.appId, set: values })
    .returning();
  return row!;
}

export async function findTraceExport(db: Db, appId: string): Promise<TraceExportRow | null> {
  const [row] = await db.select().from(appTraceExports).where(eq(appTraceExports.appId, appId));
  return row ?? null;
}

/** Removes the app's export; true when there was one. */
export async function deleteTraceExport(db: Db, appId: string): Promise<boolean> {
  const rows = await db.delete(appTraceExports).where(eq(appTraceExports.appId, appId)).returning({ appId: appTraceExports.appId });
  return rows.length > 0;
}

/** The stored headers in the clear: only the delivery opens them, right before it sends. */
export async function openTraceHeaders(
  env: Env,
  appId: string,
  sealed: { ciphertext: string | null; iv: string | null; keyVersion: number | null },
): Promise<Record<string, string>> {
  if (sealed.ciphertext === null || sealed.iv === null || sealed.keyVersion === null) return {};
  const keyring = await keyringFrom(env.PROVIDER_KEY_ENCRYPTION_KEY);
  const text = await openKey(keyring, { ciphertext: sealed.ciphertext, iv: sealed.iv, keyVersion: sealed.keyVersion }, sealContext(appId));
  return JSON.parse(text) as Record<string, string>;
}

export type DeliveryRecord = { ok: true } | { ok: false; error: string };

/** How one delivery went, kept on the app's export (visible in its GET). */
export async function recordTraceDelivery(db: SqlDatabase, appId: string, outcome: DeliveryRecord): Promise<void> {
  await queryRows(
    db,
    outcome.ok
      ? sql`update app_trace_exports set last_success_at = now(), consecutive_failures = 0
             where app_id = ${appId}::uuid returning app_id`
      : sql`update app_trace_exports set last_error_at = now(), last_error = ${outcome.error.slice(0, 500)},
                   consecutive_failures = consecutive_failures + 1
             where app_id = ${appId}::uuid returning app_id`,
  );
}

/**
 * Step 2 of an encryption-key rotation (docs/provider-keys.md) for trace-export headers: each export
 * sealed under an older version is sealed again under the keyring's current one (an export replaced
 * meanwhile is left for the next run).
 */
export async function reEncryptTraceHeaders(
  db: SqlDatabase,
  keyring: Keyring,
): Promise<{ reEncrypted: number; unreadable: number; remaining: number }> {
  const version = keyring.current.version;
  const stale = sql`headers_ciphertext is not null and headers_key_version <> ${version}`;
  const rows = await queryRows<{ app_id: string; headers_ciphertext: string; headers_iv: string; headers_key_version: number }>(
    db,
    sql`select app_id, headers_ciphertext, headers_iv, headers_key_version from app_trace_exports where ${stale} limit 500`,
  );
  let reEncrypted = 0;
  let unreadable = 0;
  for (const row of rows) {
    const context = sealContext(row.app_id);
    let sealed: SealedKey;
    try {
      const headers = await openKey(
        keyring,
        { ciphertext: row.headers_ciphertext, iv: row.headers_iv, keyVersion: row.headers_key_version },
        context,
      );
      sealed = await sealKey(keyring, headers, context);
    } catch {
      unreadable++;
      continue;
    }
    const updated = await queryRows<{ app_id: string }>(
      db,
      sql`update app_trace_exports set headers_ciphertext = ${sealed.ciphertext}, headers_iv = ${sealed.iv},
                 headers_key_version = ${sealed.keyVersion}
           where app_id = ${row.app_id}::uuid and headers_ciphertext = ${row.headers_ciphertext} returning app_id`,
    );
    reEncrypted += updated.length;
  }
  const [left] = await queryRows<{ n: number }>(db, sql`select count(*)::int as n from app_trace_exports where ${stale}`);
  return { reEncrypted, unreadable, remaining: left?.n ?? 0 };
}
