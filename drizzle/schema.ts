/**
 * The single TypeScript description of Faucet's tables. `migrations/*.sql` creates exactly this;
 * `drizzle/schema.node.test.ts` proves the two agree column by column.
 */
import { sql } from 'drizzle-orm';
import {
  bigint,
  bigserial,
  boolean,
  char,
  check,
  date,
  index,
  integer,
  jsonb,
  numeric,
  pgTable,
  primaryKey,
  text,
  timestamp,
  unique,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core';

const money = <Name extends string>(name: Name) => numeric(name, { precision: 20, scale: 8 });
const id = () => uuid('id').primaryKey().default(sql`gen_random_uuid()`);
const createdAt = () => timestamp('created_at', { withTimezone: true }).notNull().defaultNow();

export const developers = pgTable('developers', {
  id: id(),
  name: text('name').notNull(),
  email: text('email').notNull().unique(),
  createdAt: createdAt(),
  /** A reference to payout details kept elsewhere (never the bank details themselves). */
  payoutDetailsRef: text('payout_details_ref'),
  /** Set: the developer's keys get 403, their apps refuse new sessions and calls. */
  suspendedAt: timestamp('suspended_at', { withTimezone: true }),
});

/** A developer's `fdk_` keys: several live at a time (rotation); only the SHA-256 is stored. */
export const developerKeys = pgTable(
  'developer_keys',
  {
    id: id(),
    developerId: uuid('developer_id')
      .notNull()
      .references(() => developers.id),
    keyHash: text('key_hash').notNull().unique(),
    prefix: text('prefix').notNull(),
    label: text('label'),
    createdAt: createdAt(),
    /** Written at most once a minute. */
    lastUsedAt: timestamp('last_used_at', { withTimezone: true }),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
  },
  (table) => [index('developer_keys_developer').on(table.developerId, table.createdAt)],
);

export const apps = pgTable(
  'apps',
  {
    id: id(),
    developerId: uuid('developer_id')
      .notNull()
      .references(() => developers.id),
    publicAppId: text('public_app_id').notNull().unique(),
    name: text('name').notNull(),
    /** Channel share of the platform margin paid to the developer, in basis points. */
    developerShareBps: integer('developer_share_bps').notNull().default(5000),
    createdAt: createdAt(),
    /** Who may mint sessions (docs/identity.md): `server` (default), `signed`, `anonymous`. */
    sessionPolicy: text('session_policy').notNull().default('server'),
    /** `signed` apps verifying user tokens against the developer's JWKS; null = app signing secrets. */
    jwksUrl: text('jwks_url'),
    /** Web origins (`https://host[:port]`) allowed to call Faucet for this app, a JSON array. */
    allowedOrigins: jsonb('allowed_origins').$type<string[]>().notNull().default([]),
    /** Archived apps refuse new sessions and calls; never deleted (ledger rows reference them). */
    archivedAt: timestamp('archived_at', { withTimezone: true }),
    /** The feature a call without `feature` uses. */
    defaultFeatureKey: text('default_feature_key'),
    /** Per-end-user limits; null = none. */
    limitSpendPerDayUsd: money('limit_spend_per_day_usd'),
    limitSpendPerMonthUsd: money('limit_spend_per_month_usd'),
    limitRequestsPerMinute: integer('limit_requests_per_minute'),
    /** Days the request log keeps the app's calls (migration 0030); usage records and the ledger are never deleted. */
    callLogRetentionDays: integer('call_log_retention_days').notNull().default(30),
    /** An end user's balance falling below it sends `end_user.balance_low` (docs/webhooks.md); null = none. */
    lowBalanceThresholdUsd: money('low_balance_threshold_usd'),
  },
  (table) => [
    check('apps_session_policy', sql`${table.sessionPolicy} in ('server', 'signed', 'anonymous')`),
    check(
      'apps_limits_positive',
      sql`(${table.limitSpendPerDayUsd} is null or ${table.limitSpendPerDayUsd} > 0) and (${table.limitSpendPerMonthUsd} is null or ${table.limitSpendPerMonthUsd} > 0) and (${table.limitRequestsPerMinute} is null or ${table.limitRequestsPerMinute} > 0)`,
    ),
    index('apps_allowed_origins').using('gin', table.allowedOrigins),
    check('apps_call_log_retention_days', sql`${table.callLogRetentionDays} between 1 and 400`),
    check('apps_low_balance_threshold', sql`${table.lowBalanceThresholdUsd} is null or ${table.lowBalanceThresholdUsd} > 0`),
  ],
);

/** HS256 secrets of `signed` apps, sealed like provider keys; `retires_at` set = previous, verifying until then. */
export const appSigningSecrets = pgTable(
  'app_signing_secrets',
  {
    id: id(),
    appId: uuid('app_id')
      .notNull()
      .references(() => apps.id),
    ciphertext: text('ciphertext').notNull(),
    iv: text('iv').notNull(),
    keyVersion: integer('key_version').notNull(),
    createdAt: createdAt(),
    retiresAt: timestamp('retires_at', { withTimezone: true }),
  },
  (table) => [index('app_signing_secrets_app').on(table.appId)],
);

export const appFeatures = pgTable(
  'app_features',
  {
    id: id(),
    appId: uuid('app_id')
      .notNull()
      .references(() => apps.id),
    featureKey: text('feature_key').notNull(),
    name: text('name').notNull(),
    defaultModel: text('default_model').notNull(),
    /** `platform_first` or `byok_first` (DESIGN §6). */
    routePolicy: text('route_policy').notNull().default('platform_first'),
    /** Retail price per million tokens on the developer_key route; null = upstream cost. */
    developerPricePerMtokUsd: money('developer_price_per_mtok_usd'),
    /** Fee per call on byok/local routes, shown openly to the user. */
    openFeeUsd: money('open_fee_usd').notNull().default('0'),
    createdAt: createdAt(),
    /** `provider:model` names a call may use; empty = any. */
    allowedModels: jsonb('allowed_models').$type<string[]>().notNull().default([]),
    /** Caps a call's output tokens (sent upstream as max_tokens); null = the model's own bound. */
    maxOutputTokens: integer('max_output_tokens'),
    archivedAt: timestamp('archived_at', { withTimezone: true }),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
    /** Alias name → `provider:model` a call's `model` may name (migration 0015). */
    modelAliases: jsonb('model_aliases').$type<Record<string, string>>().notNull().default({}),
    /** `provider:model` tried in order when the call's model fails before its first byte; at most 3. */
    fallbackModels: jsonb('fallback_models').$type<string[]>().notNull().default([]),
  },
  (table) => [
    uniqueIndex('app_features_app_feature_key').on(table.appId, table.featureKey),
    check('app_features_route_policy', sql`${table.routePolicy} in ('platform_first', 'byok_first')`),
    check('app_features_max_output_tokens', sql`${table.maxOutputTokens} is null or ${table.maxOutputTokens} > 0`),
    check('app_features_model_aliases', sql`jsonb_typeof(${table.modelAliases}) = 'object'`),
    check(
      'app_features_fallback_models',
      sql`jsonb_typeof(${table.fallbackModels}) = 'array' and jsonb_array_length(${table.fallbackModels}) <= 3`,
    ),
  ],
);

export const endUsers = pgTable(
  'end_users',
  {
    id: id(),
    appId: uuid('app_id')
      .notNull()
      .references(() => apps.id),
    /** HMAC-SHA-256 of the external user id with SESSION_HASH_SECRET; the raw id is never stored. */
    externalUserHash: text('external_user_hash').notNull(),
    createdAt: createdAt(),
    /** The name of the end user's wallet object (migration 0022), set when a session is minted. */
    walletObject: text('wallet_object'),
  },
  (table) => [
    uniqueIndex('end_users_app_external').on(table.appId, table.externalUserHash),
    uniqueIndex('end_users_wallet_object').on(table.walletObject).where(sql`wallet_object is not null`),
  ],
);

/** Every ledger account: user and developer wallets and the platform's system accounts. */
export const wallets = pgTable(
  'wallets',
  {
    id: id(),
    /** `user`, `developer`, `platform_revenue`, `platform_upstream_payable`, `payment_clearing`. */
    kind: text('kind').notNull(),
    endUserId: uuid('end_user_id')
      .unique()
      .references(() => endUsers.id),
    developerId: uuid('developer_id')
      .unique()
      .references(() => developers.id),
    currency: char('currency', { length: 3 }).notNull().default('USD'),
    /** Cache of the sum of this wallet's entries; reconciliation recomputes it. */
    balance: money('balance').notNull().default('0'),
    /** System accounts (clearing, payable) may go negative; wallets never. */
    allowNegative: boolean('allow_negative').notNull().default(false),
    /** Set by a receivable debit (chargeback, refund, clawback) that took the wallet below zero. */
    receivable: boolean('receivable').notNull().default(false),
    createdAt: createdAt(),
  },
  (table) => [
    check(
      'wallets_non_negative_unless_receivable',
      sql`${table.allowNegative} or ${table.kind} = 'user' or ${table.receivable} or ${table.balance} >= 0`,
    ),
    uniqueIndex('wallets_system_kind').on(table.kind).where(sql`${table.endUserId} is null and ${table.developerId} is null`),
  ],
);

export const ledgerTransactions = pgTable('ledger_transactions', {
  id: id(),
  /** `seed_opening_balance`, `usage`, `adjustment`, `refund`, `chargeback`, `top_up`, `payout`. */
  kind: text('kind').notNull(),
  /** Makes a booking happen once: usage uses `usage:<request_id>`, others their own key. */
  idempotencyKey: text('idempotency_key').unique(),
  requestId: text('request_id'),
  reason: text('reason'),
  metadata: jsonb('metadata').notNull().default({}),
  createdAt: createdAt(),
});

export const ledgerEntries = pgTable(
  'ledger_entries',
  {
    id: bigserial('id', { mode: 'bigint' }).primaryKey(),
    transactionId: uuid('transaction_id')
      .notNull()
      .references(() => ledgerTransactions.id),
    walletId: uuid('wallet_id')
      .notNull()
      .references(() => wallets.id),
    /** Signed: positive credits the wallet, negative debits it. A transaction's entries sum to zero. */
    amount: money('amount').notNull(),
    createdAt: createdAt(),
  },
  (table) => [index('ledger_entries_wallet').on(table.walletId), index('ledger_entries_transaction').on(table.transactionId)],
);

/**
 * Credits appended to the hot accounts (developer wallets, platform accounts) by usage bookings, not
 * yet folded into `wallets.balance`; a wallet's balance is its row's balance plus these
 * (migrations/0002_ledger.sql, docs/money.md).
 */
export const walletBalanceDeltas = pgTable(
  'wallet_balance_deltas',
  {
    id: bigserial('id', { mode: 'bigint' }).primaryKey(),
    walletId: uuid('wallet_id')
      .notNull()
      .references(() => wallets.id),
    amount: money('amount').notNull(),
    createdAt: createdAt(),
  },
  (table) => [index('wallet_balance_deltas_wallet').on(table.walletId), check('wallet_balance_deltas_positive', sql`${table.amount} > 0`)],
);

export const balanceHolds = pgTable(
  'balance_holds',
  {
    id: id(),
    walletId: uuid('wallet_id')
      .notNull()
      .references(() => wallets.id),
    requestId: text('request_id').notNull().unique(),
    amount: money('amount').notNull(),
    /** `active`, `settled`, `released`, `expired`. */
    status: text('status').notNull().default('active'),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    createdAt: createdAt(),
    closedAt: timestamp('closed_at', { withTimezone: true }),
    /** A wallet object's lease under a requests-per-minute limit: the calls it may hold unrecorded (migration 0023). */
    callSlots: integer('call_slots'),
  },
  (table) => [index('balance_holds_wallet_active').on(table.walletId).where(sql`${table.status} = 'active'`)],
);

export const virtualSessions = pgTable(
  'virtual_sessions',
  {
    id: id(),
    tokenHash: text('token_hash').notNull().unique(),
    appId: uuid('app_id')
      .notNull()
      .references(() => apps.id),
    endUserId: uuid('end_user_id')
      .notNull()
      .references(() => endUsers.id),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    createdAt: createdAt(),
    /** Set when the developer revoked the session; the gateway and /v1/user/* refuse it from then on. */
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
  },
  (table) => [index('virtual_sessions_expires').on(table.expiresAt), index('virtual_sessions_end_user').on(table.endUserId)],
);

export const providerCredentials = pgTable(
  'provider_credentials',
  {
    id: id(),
    /** `end_user` (BYOK) or `developer`. */
    ownerType: text('owner_type').notNull(),
    endUserId: uuid('end_user_id').references(() => endUsers.id),
    developerId: uuid('developer_id').references(() => developers.id),
    provider: text('provider').notNull(),
    label: text('label'),
    /** AES-256-GCM ciphertext and IV, base64; `key_version` names the encryption key used. */
    ciphertext: text('ciphertext').notNull(),
    iv: text('iv').notNull(),
    keyVersion: integer('key_version').notNull(),
    maskedKey: text('masked_key').notNull(),
    status: text('status').$type<'active' | 'disabled'>().notNull().default('active'),
    monthlyBudgetUsd: money('monthly_budget_usd'),
    /** The API root the key is used at: required for `azure` and `custom` (migration 0016), null for the catalog's root. */
    baseUrl: text('base_url'),
    createdAt: createdAt(),
    disabledAt: timestamp('disabled_at', { withTimezone: true }),
  },
  (table) => [
    index('provider_credentials_end_user').on(table.endUserId, table.provider),
    index('provider_credentials_developer').on(table.developerId, table.provider),
    uniqueIndex('provider_credentials_one_active_end_user')
      .on(table.endUserId, table.provider)
      .where(sql`${table.status} = 'active' and ${table.ownerType} = 'end_user'`),
    uniqueIndex('provider_credentials_one_active_developer')
      .on(table.developerId, table.provider)
      .where(sql`${table.status} = 'active' and ${table.ownerType} = 'developer'`),
  ],
);

/** A developer-key call in flight: its upstream cost bound, counted against the key's monthly budget until settled. */
export const providerCredentialReservations = pgTable(
  'provider_credential_reservations',
  {
    requestId: text('request_id').primaryKey(),
    credentialId: uuid('credential_id')
      .notNull()
      .references(() => providerCredentials.id),
    amount: money('amount').notNull(),
    createdAt: createdAt(),
    /** A wallet object's budget lease (`lease:<wallet>:<key id>`, migration 0024) lapses then; a call's own reservation: null. */
    expiresAt: timestamp('expires_at', { withTimezone: true }),
  },
  (table) => [index('provider_credential_reservations_credential').on(table.credentialId)],
);

/** One gateway call from its authorization on (migration 0006): the idempotency claim and the record the sweeper books. */
export const gatewayCalls = pgTable(
  'gateway_calls',
  {
    id: uuid('id').primaryKey(),
    /** `call:<id>`: the key of the call's hold, booking and budget reservation. */
    moneyKey: text('money_key').notNull().unique(),
    clientRequestId: text('client_request_id').notNull(),
    fingerprint: text('fingerprint').notNull(),
    appId: uuid('app_id')
      .notNull()
      .references(() => apps.id),
    endUserId: uuid('end_user_id')
      .notNull()
      .references(() => endUsers.id),
    featureKey: text('feature_key').notNull(),
    routeMode: text('route_mode'),
    provider: text('provider').notNull(),
    model: text('model').notNull(),
    providerCredentialId: uuid('provider_credential_id').references(() => providerCredentials.id),
    boundInputTokens: integer('bound_input_tokens').notNull(),
    boundOutputTokens: integer('bound_output_tokens').notNull(),
    /** `in_flight`, `settled`, `abandoned`. */
    status: text('status').notNull().default('in_flight'),
    deadlineAt: timestamp('deadline_at', { withTimezone: true }).notNull(),
    createdAt: createdAt(),
    closedAt: timestamp('closed_at', { withTimezone: true }),
    // What the call was authorized with (migration 0014); null on calls authorized before it.
    developerPricePerMtokUsd: money('developer_price_per_mtok_usd'),
    openFeeUsd: money('open_fee_usd'),
    developerShareBps: integer('developer_share_bps'),
    platformMarkupBps: integer('platform_markup_bps'),
    platformFeeBps: integer('platform_fee_bps'),
    /** The feature's fallbacks (`provider:model`) the hold was sized over (migration 0018); null before it or without fallback. */
    fallbackModels: jsonb('fallback_models').$type<string[]>(),
    /**
     * The longest lifetime of the prompt's cache breakpoints (`5m`, `1h`; migration 0035): a call
     * booked at its bound prices its input at that cache-write price, as its hold did. Null: none.
     */
    boundCacheLifetime: text('bound_cache_lifetime').$type<'5m' | '1h'>(),
  },
  (table) => [
    check('gateway_calls_status', sql`${table.status} in ('in_flight', 'settled', 'abandoned')`),
    check('gateway_calls_bound_input_tokens_check', sql`${table.boundInputTokens} >= 0`),
    check('gateway_calls_bound_output_tokens_check', sql`${table.boundOutputTokens} >= 0`),
    check('gateway_calls_bound_cache_lifetime', sql`${table.boundCacheLifetime} in ('5m', '1h')`),
    uniqueIndex('gateway_calls_idempotency').on(table.endUserId, table.clientRequestId).where(sql`${table.status} <> 'abandoned'`),
    index('gateway_calls_in_flight').on(table.deadlineAt).where(sql`${table.status} = 'in_flight'`),
    // Per-end-user limits (migration 0011): the last minute's calls, and the calls in flight.
    index('gateway_calls_end_user_created').on(table.endUserId, table.createdAt),
    index('gateway_calls_end_user_in_flight').on(table.endUserId).where(sql`${table.status} = 'in_flight'`),
  ],
);

/**
 * The request log (migration 0030, docs/request-log.md): one row per call a wallet object decided,
 * written by its flush. Tokens and money are the call's usage record (`usage_events.call_id`); no
 * content is kept.
 */
export const gatewayCallLog = pgTable(
  'gateway_call_log',
  {
    id: uuid('id').primaryKey(),
    appId: uuid('app_id')
      .notNull()
      .references(() => apps.id),
    endUserId: uuid('end_user_id')
      .notNull()
      .references(() => endUsers.id),
    featureKey: text('feature_key').notNull(),
    /** `chat.completions`, `responses`, `messages`, `embeddings`. */
    surface: text('surface').notNull(),
    requestedModel: text('requested_model').notNull(),
    provider: text('provider'),
    model: text('model'),
    routeMode: text('route_mode'),
    /** `answered`, `cut`, `upstream_error`, `refused`. */
    outcome: text('outcome').notNull(),
    errorCode: text('error_code'),
    errorMessage: text('error_message'),
    clientRequestId: text('client_request_id').notNull(),
    stream: boolean('stream').notNull().default(false),
    authorizeMs: integer('authorize_ms'),
    firstByteMs: integer('first_byte_ms'),
    totalMs: integer('total_ms'),
    attempts: jsonb('attempts').$type<unknown[]>(),
    providerCredentialId: uuid('provider_credential_id').references(() => providerCredentials.id, { onDelete: 'set null' }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
  },
  (table) => [
    check('gateway_call_log_outcome', sql`${table.outcome} in ('answered', 'cut', 'upstream_error', 'refused')`),
    check('gateway_call_log_surface', sql`${table.surface} in ('chat.completions', 'responses', 'messages', 'embeddings')`),
    check(
      'gateway_call_log_timings',
      sql`coalesce(${table.authorizeMs}, 0) >= 0 and coalesce(${table.firstByteMs}, 0) >= 0 and coalesce(${table.totalMs}, 0) >= 0`,
    ),
    index('gateway_call_log_app_created').on(table.appId, table.createdAt.desc(), table.id.desc()),
    index('gateway_call_log_end_user_created').on(table.endUserId, table.createdAt.desc(), table.id.desc()),
    index('gateway_call_log_client_request').on(table.appId, table.clientRequestId),
  ],
);

/** Per app, where its calls' spans go (OTLP/HTTP) and how the last deliveries went (docs/traces.md). */
export const appTraceExports = pgTable(
  'app_trace_exports',
  {
    appId: uuid('app_id')
      .primaryKey()
      .references(() => apps.id),
    endpoint: text('endpoint').notNull(),
    /** The headers as one sealed JSON object (null: none). */
    headersCiphertext: text('headers_ciphertext'),
    headersIv: text('headers_iv'),
    headersKeyVersion: integer('headers_key_version'),
    /** Each header's name and its mask, for display. */
    headersMasked: jsonb('headers_masked').$type<Record<string, string>>().notNull().default({}),
    enabled: boolean('enabled').notNull().default(true),
    createdAt: createdAt(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
    lastSuccessAt: timestamp('last_success_at', { withTimezone: true }),
    lastErrorAt: timestamp('last_error_at', { withTimezone: true }),
    lastError: text('last_error'),
    consecutiveFailures: integer('consecutive_failures').notNull().default(0),
  },
  (table) => [
    check(
      'app_trace_exports_sealed',
      sql`(${table.headersCiphertext} is null) = (${table.headersIv} is null) and (${table.headersCiphertext} is null) = (${table.headersKeyVersion} is null)`,
    ),
    check('app_trace_exports_failures', sql`${table.consecutiveFailures} >= 0`),
  ],
);

export const usageEvents = pgTable(
  'usage_events',
  {
    id: id(),
    requestId: text('request_id').notNull().unique(),
    appId: uuid('app_id')
      .notNull()
      .references(() => apps.id),
    endUserId: uuid('end_user_id').references(() => endUsers.id),
    featureKey: text('feature_key').notNull(),
    /** `platform`, `developer_key`, `byok`, `local`. */
    routeMode: text('route_mode').notNull(),
    provider: text('provider').notNull(),
    model: text('model').notNull(),
    inputTokens: integer('input_tokens').notNull(),
    outputTokens: integer('output_tokens').notNull(),
    cachedTokens: integer('cached_tokens').notNull().default(0),
    /** True when the provider gave no token counts and Faucet estimated them. */
    estimated: boolean('estimated').notNull().default(false),
    upstreamCostUsd: money('upstream_cost_usd').notNull(),
    retailUsd: money('retail_usd').notNull(),
    developerRevenueUsd: money('developer_revenue_usd').notNull(),
    platformShareUsd: money('platform_share_usd').notNull(),
    providerCredentialId: uuid('provider_credential_id').references(() => providerCredentials.id),
    ledgerTransactionId: uuid('ledger_transaction_id').references(() => ledgerTransactions.id),
    /** The client's x-request-id (correlation only); `request_id` is the server's money key. */
    clientRequestId: text('client_request_id'),
    callId: uuid('call_id').references(() => gatewayCalls.id),
    /** The part of the retail the wallet could not cover when the booking was written anyway. */
    receivableUsd: money('receivable_usd').notNull().default('0'),
    createdAt: createdAt(),
    /** The price catalog version the call was rated with; null when no catalog price was needed (byok, local). */
    priceCatalogVersion: text('price_catalog_version'),
    /** Parts of `input_tokens` (besides `cached_tokens`) and of `output_tokens` priced apart (migration 0013). */
    cacheWriteTokens: integer('cache_write_tokens').notNull().default(0),
    audioInputTokens: integer('audio_input_tokens').notNull().default(0),
    audioOutputTokens: integer('audio_output_tokens').notNull().default(0),
    reasoningTokens: integer('reasoning_tokens').notNull().default(0),
    /** Input written to the prompt cache for one hour, apart from `cache_write_tokens` (the five-minute writes; migration 0034). */
    cacheWrite1hTokens: integer('cache_write_1h_tokens').notNull().default(0),
    /** USD per million tokens of each class as rated (its period and tier); all null with `price_catalog_version`. */
    inputPricePerMtokUsd: money('input_price_per_mtok_usd'),
    cachedInputPricePerMtokUsd: money('cached_input_price_per_mtok_usd'),
    cacheWritePricePerMtokUsd: money('cache_write_price_per_mtok_usd'),
    audioInputPricePerMtokUsd: money('audio_input_price_per_mtok_usd'),
    outputPricePerMtokUsd: money('output_price_per_mtok_usd'),
    reasoningPricePerMtokUsd: money('reasoning_price_per_mtok_usd'),
    audioOutputPricePerMtokUsd: money('audio_output_price_per_mtok_usd'),
    /** The one-hour cache write's price as rated: null without catalog prices, and on rows from before migration 0034. */
    cacheWrite1hPricePerMtokUsd: money('cache_write_1h_price_per_mtok_usd'),
  },
  (table) => [
    uniqueIndex('usage_events_call').on(table.callId).where(sql`${table.callId} is not null`),
    index('usage_events_client_request').on(table.endUserId, table.clientRequestId),
    index('usage_events_end_user_created').on(table.endUserId, table.createdAt),
    index('usage_events_created').on(table.createdAt),
    index('usage_events_credential_created').on(table.providerCredentialId, table.createdAt),
    index('usage_events_app_created').on(table.appId, table.createdAt),
    // The request log's `outcome=estimated`: a probe per call that finds nothing for most, without the heap.
    index('usage_events_estimated_request').on(table.requestId).where(sql`${table.estimated}`),
    check(
      'usage_events_token_parts',
      sql`least(${table.cacheWriteTokens}, ${table.cacheWrite1hTokens}, ${table.audioInputTokens}, ${table.audioOutputTokens},
          ${table.reasoningTokens}) >= 0
        and ${table.cachedTokens} + ${table.cacheWriteTokens} + ${table.cacheWrite1hTokens} + ${table.audioInputTokens} <= ${table.inputTokens}
        and ${table.audioOutputTokens} + ${table.reasoningTokens} <= ${table.outputTokens}`,
    ),
    check(
      'usage_events_cache_write_1h_priced',
      sql`(${table.cacheWrite1hPricePerMtokUsd} is null or ${table.inputPricePerMtokUsd} is not null)
        and (${table.cacheWrite1hTokens} = 0 or ${table.inputPricePerMtokUsd} is null or ${table.cacheWrite1hPricePerMtokUsd} is not null)`,
    ),
    check(
      'usage_events_prices_recorded',
      sql`(${table.priceCatalogVersion} is null) = (${table.inputPricePerMtokUsd} is null)
        and num_nulls(${table.inputPricePerMtokUsd}, ${table.cachedInputPricePerMtokUsd}, ${table.cacheWritePricePerMtokUsd},
          ${table.audioInputPricePerMtokUsd}, ${table.outputPricePerMtokUsd}, ${table.reasoningPricePerMtokUsd},
          ${table.audioOutputPricePerMtokUsd}) in (0, 7)`,
    ),
  ],
);

/**
 * The developer usage rollup (migrations/0012_usage_rollup.sql, docs/developers.md "Usage"): per UTC
 * day and app × feature × provider × model × route, each measure is 25 running sums over the day's
 * hours (element k + 1 sums the hours before k), so a run of whole hours is one subtraction.
 */
export const usageRollupDaily = pgTable(
  'usage_rollup_daily',
  {
    day: date('day', { mode: 'string' }).notNull(),
    appId: uuid('app_id')
      .notNull()
      .references(() => apps.id),
    featureKey: text('feature_key').notNull(),
    provider: text('provider').notNull(),
    model: text('model').notNull(),
    routeMode: text('route_mode').notNull(),
    calls: bigint('calls', { mode: 'number' }).array().notNull(),
    inputTokens: bigint('input_tokens', { mode: 'number' }).array().notNull(),
    outputTokens: bigint('output_tokens', { mode: 'number' }).array().notNull(),
    retailUsd: numeric('retail_usd').array().notNull(),
    developerRevenueUsd: numeric('developer_revenue_usd').array().notNull(),
    upstreamCostUsd: numeric('upstream_cost_usd').array().notNull(),
  },
  (table) => [
    primaryKey({
      name: 'usage_rollup_daily_pkey',
      columns: [table.appId, table.day, table.featureKey, table.provider, table.model, table.routeMode],
    }),
  ],
);

/** The day totals of each app: `usage_rollup_daily`'s running sums added up per UTC day × app (migration 0017). */
export const usageRollupAppDaily = pgTable(
  'usage_rollup_app_daily',
  {
    appId: uuid('app_id')
      .notNull()
      .references(() => apps.id),
    day: date('day', { mode: 'string' }).notNull(),
    /** How many `usage_rollup_daily` rows (groups) the app has that day. */
    keys: integer('keys').notNull(),
    calls: bigint('calls', { mode: 'number' }).array().notNull(),
    inputTokens: bigint('input_tokens', { mode: 'number' }).array().notNull(),
    outputTokens: bigint('output_tokens', { mode: 'number' }).array().notNull(),
    retailUsd: numeric('retail_usd').array().notNull(),
    developerRevenueUsd: numeric('developer_revenue_usd').array().notNull(),
    upstreamCostUsd: numeric('upstream_cost_usd').array().notNull(),
  },
  (table) => [primaryKey({ name: 'usage_rollup_app_daily_pkey', columns: [table.appId, table.day] })],
);

/** Usage events not folded into `usage_rollup_daily` yet, appended by a trigger on `usage_events`. */
export const usageRollupPending = pgTable(
  'usage_rollup_pending',
  {
    usageEventId: uuid('usage_event_id')
      .primaryKey()
      .references(() => usageEvents.id),
    appId: uuid('app_id').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
  },
  (table) => [index('usage_rollup_pending_app_created').on(table.appId, table.createdAt)],
);

export const payouts = pgTable(
  'payouts',
  {
    id: id(),
    developerId: uuid('developer_id')
      .notNull()
      .references(() => developers.id),
    walletId: uuid('wallet_id')
      .notNull()
      .references(() => wallets.id),
    amount: money('amount').notNull(),
    /** `pending` → `processing` → `paid`; `pending` → `cancelled` | `rejected`. */
    status: text('status').notNull().default('pending'),
    operatorNote: text('operator_note'),
    ledgerTransactionId: uuid('ledger_transaction_id').references(() => ledgerTransactions.id),
    createdAt: createdAt(),
    approvedAt: timestamp('approved_at', { withTimezone: true }),
    paidAt: timestamp('paid_at', { withTimezone: true }),
    closedAt: timestamp('closed_at', { withTimezone: true }),
  },
  (table) => [uniqueIndex('payouts_one_open_per_wallet').on(table.walletId).where(sql`${table.status} in ('pending', 'processing')`)],
);

export const auditLogs = pgTable(
  'audit_logs',
  {
    id: bigserial('id', { mode: 'bigint' }).primaryKey(),
    /** `user`, `developer`, `admin`, `system`. */
    actorType: text('actor_type').notNull(),
    actorId: text('actor_id'),
    action: text('action').notNull(),
    targetType: text('target_type').notNull(),
    targetId: text('target_id').notNull(),
    requestId: text('request_id'),
    metadata: jsonb('metadata').$type<Record<string, unknown>>().notNull().default({}),
    createdAt: createdAt(),
  },
  (table) => [
    index('audit_logs_target').on(table.targetType, table.targetId),
    index('audit_logs_actor').on(table.actorType, table.actorId),
  ],
);

export const checkoutSessions = pgTable(
  'checkout_sessions',
  {
    id: id(),
    stripeSessionId: text('stripe_session_id').notNull().unique(),
    walletId: uuid('wallet_id')
      .notNull()
      .references(() => wallets.id),
    amountCents: integer('amount_cents').notNull(),
    /** `pending`, `completed`, `expired`. */
    status: text('status').notNull().default('pending'),
    ledgerTransactionId: uuid('ledger_transaction_id').references(() => ledgerTransactions.id),
    createdAt: createdAt(),
    completedAt: timestamp('completed_at', { withTimezone: true }),
    /** The payment intent that paid the session: refunds and disputes name it, never the session. */
    stripePaymentIntentId: text('stripe_payment_intent_id'),
    /** Cents Stripe took back (refunds and disputes booked, less disputes won); never above `amountCents`. */
    reversedCents: bigint('reversed_cents', { mode: 'number' }).notNull().default(0),
  },
  (table) => [
    uniqueIndex('checkout_sessions_payment_intent').on(table.stripePaymentIntentId).where(sql`${table.stripePaymentIntentId} is not null`),
  ],
);

/** The part of a receivable debit that went below zero: what the wallet's owner owes, per booking. */
export const receivables = pgTable(
  'receivables',
  {
    id: id(),
    walletId: uuid('wallet_id')
      .notNull()
      .references(() => wallets.id),
    ledgerTransactionId: uuid('ledger_transaction_id')
      .notNull()
      .unique()
      .references(() => ledgerTransactions.id),
    /** The transaction's kind: `refund`, `chargeback`, `revenue_clawback`. */
    kind: text('kind').notNull(),
    amount: money('amount').notNull(),
    createdAt: createdAt(),
  },
  (table) => [check('receivables_positive', sql`${table.amount} > 0`), index('receivables_wallet').on(table.walletId)],
);

/** Per Stripe charge, the cumulative refunded amount already booked. */
export const stripeCharges = pgTable('stripe_charges', {
  chargeId: text('charge_id').primaryKey(),
  paymentIntentId: text('payment_intent_id').notNull(),
  checkoutSessionId: uuid('checkout_session_id')
    .notNull()
    .references(() => checkoutSessions.id),
  refundedCents: bigint('refunded_cents', { mode: 'number' }).notNull().default(0),
  createdAt: createdAt(),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
});

/** A Stripe dispute: booked once as a chargeback, credited back once if won. */
export const stripeDisputes = pgTable('stripe_disputes', {
  disputeId: text('dispute_id').primaryKey(),
  chargeId: text('charge_id').notNull(),
  checkoutSessionId: uuid('checkout_session_id')
    .notNull()
    .references(() => checkoutSessions.id),
  amountCents: bigint('amount_cents', { mode: 'number' }).notNull(),
  /** `open`, `won`. */
  status: text('status').notNull().default('open'),
  ledgerTransactionId: uuid('ledger_transaction_id').references(() => ledgerTransactions.id),
  reversalTransactionId: uuid('reversal_transaction_id').references(() => ledgerTransactions.id),
  createdAt: createdAt(),
  closedAt: timestamp('closed_at', { withTimezone: true }),
});

/** Developer revenue clawed back after a chargeback or refund of spent money; reviewable, reversible. */
export const revenueClawbacks = pgTable(
  'revenue_clawbacks',
  {
    id: id(),
    sourceTransactionId: uuid('source_transaction_id')
      .notNull()
      .unique()
      .references(() => ledgerTransactions.id),
    sourceKind: text('source_kind').notNull(),
    userWalletId: uuid('user_wallet_id')
      .notNull()
      .references(() => wallets.id),
    developerId: uuid('developer_id')
      .notNull()
      .references(() => developers.id),
    developerWalletId: uuid('developer_wallet_id')
      .notNull()
      .references(() => wallets.id),
    spentUsd: money('spent_usd').notNull(),
    developerRevenueBasisUsd: money('developer_revenue_basis_usd').notNull(),
    retailBasisUsd: money('retail_basis_usd').notNull(),
    amount: money('amount').notNull(),
    /** `booked`, `reversed`. */
    status: text('status').notNull().default('booked'),
    ledgerTransactionId: uuid('ledger_transaction_id')
      .notNull()
      .references(() => ledgerTransactions.id),
    reversalTransactionId: uuid('reversal_transaction_id').references(() => ledgerTransactions.id),
    reversalNote: text('reversal_note'),
    createdAt: createdAt(),
    reversedAt: timestamp('reversed_at', { withTimezone: true }),
  },
  (table) => [
    check('revenue_clawbacks_positive', sql`${table.amount} > 0`),
    index('revenue_clawbacks_created').on(table.createdAt),
    index('revenue_clawbacks_user_wallet').on(table.userWalletId).where(sql`${table.status} = 'booked'`),
  ],
);

/** A developer's webhook endpoint (docs/webhooks.md): the event types it takes, its sealed signing secret(s). */
export const webhookEndpoints = pgTable(
  'webhook_endpoints',
  {
    id: id(),
    developerId: uuid('developer_id')
      .notNull()
      .references(() => developers.id),
    url: text('url').notNull(),
    description: text('description'),
    /** The event types delivered here; `*` = all. */
    eventTypes: text('event_types').array().notNull(),
    enabled: boolean('enabled').notNull().default(true),
    secretCiphertext: text('secret_ciphertext').notNull(),
    secretIv: text('secret_iv').notNull(),
    secretKeyVersion: integer('secret_key_version').notNull(),
    /** The secret's last four characters, for display. */
    secretHint: text('secret_hint').notNull(),
    /** During a rotation the previous secret signs too, until `previous_secret_expires_at`. */
    previousSecretCiphertext: text('previous_secret_ciphertext'),
    previousSecretIv: text('previous_secret_iv'),
    previousSecretKeyVersion: integer('previous_secret_key_version'),
    previousSecretExpiresAt: timestamp('previous_secret_expires_at', { withTimezone: true }),
    createdAt: createdAt(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
    deletedAt: timestamp('deleted_at', { withTimezone: true }),
  },
  (table) => [
    check('webhook_endpoints_event_types', sql`cardinality(${table.eventTypes}) > 0`),
    check(
      'webhook_endpoints_previous_secret',
      sql`(${table.previousSecretCiphertext} is null) = (${table.previousSecretIv} is null) and (${table.previousSecretCiphertext} is null) = (${table.previousSecretKeyVersion} is null) and (${table.previousSecretCiphertext} is null) = (${table.previousSecretExpiresAt} is null)`,
    ),
    index('webhook_endpoints_developer').on(table.developerId, table.createdAt).where(sql`deleted_at is null`),
  ],
);

/** The outbox of signed events: written by triggers in the transaction of the change each reports. */
export const webhookEvents = pgTable(
  'webhook_events',
  {
    id: id(),
    developerId: uuid('developer_id')
      .notNull()
      .references(() => developers.id),
    type: text('type').notNull(),
    /** Internal ids; the delivery renders the public ones. */
    data: jsonb('data').notNull(),
    dedupeKey: text('dedupe_key').unique(),
    createdAt: createdAt(),
    relayedAt: timestamp('relayed_at', { withTimezone: true }),
  },
  (table) => [
    index('webhook_events_unrelayed').on(table.createdAt).where(sql`relayed_at is null`),
    index('webhook_events_developer_created').on(table.developerId, table.createdAt),
  ],
);

/** One event to one endpoint: pending until delivered or out of attempts. */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    id: id(),
    eventId: uuid('event_id')
      .notNull()
      .references(() => webhookEvents.id),
    endpointId: uuid('endpoint_id')
      .notNull()
      .references(() => webhookEndpoints.id),
    developerId: uuid('developer_id')
      .notNull()
      .references(() => developers.id),
    status: text('status').$type<'pending' | 'delivered' | 'failed'>().notNull().default('pending'),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true }).notNull().defaultNow(),
    lastAttemptAt: timestamp('last_attempt_at', { withTimezone: true }),
    lastStatus: integer('last_status'),
    lastError: text('last_error'),
    deliveredAt: timestamp('delivered_at', { withTimezone: true }),
    createdAt: createdAt(),
  },
  (table) => [
    check('webhook_deliveries_status', sql`${table.status} in ('pending', 'delivered', 'failed')`),
    check('webhook_deliveries_attempts', sql`${table.attempts} >= 0`),
    unique('webhook_deliveries_once').on(table.eventId, table.endpointId),
    index('webhook_deliveries_endpoint_created').on(table.endpointId, table.createdAt.desc(), table.id.desc()),
    index('webhook_deliveries_pending').on(table.nextAttemptAt).where(sql`status = 'pending'`),
    index('webhook_deliveries_created').on(table.createdAt),
  ],
);

/** Each try of a delivery: the endpoint's status or why it was not sent. */
export const webhookDeliveryAttempts = pgTable(
  'webhook_delivery_attempts',
  {
    id: id(),
    deliveryId: uuid('delivery_id')
      .notNull()
      .references(() => webhookDeliveries.id),
    attemptedAt: timestamp('attempted_at', { withTimezone: true }).notNull().defaultNow(),
    statusCode: integer('status_code'),
    error: text('error'),
    durationMs: integer('duration_ms').notNull(),
  },
  (table) => [
    check('webhook_delivery_attempts_duration', sql`${table.durationMs} >= 0`),
    index('webhook_delivery_attempts_delivery').on(table.deliveryId, table.attemptedAt),
  ],
);

export const processedWebhookEvents = pgTable('processed_webhook_events', {
  eventId: text('event_id').primaryKey(),
  type: text('type').notNull(),
  receivedAt: timestamp('received_at', { withTimezone: true }).notNull().defaultNow(),
});

export const schemaMigrations = pgTable('schema_migrations', {
  name: text('name').primaryKey(),
  checksum: text('checksum').notNull(),
  appliedAt: timestamp('applied_at', { withTimezone: true }).notNull().defaultNow(),
});
