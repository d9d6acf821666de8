/** Wire shapes of the developer endpoints the console reads (the API's OpenAPI is the source). */
export interface AppLimits {
  spend_per_day_usd: string | null;
  spend_per_month_usd: string | null;
  requests_per_minute: number | null;
}

export interface App {
  public_app_id: string;
  name: string;
  default_feature_key: string | null;
  limits: AppLimits;
  session_policy: 'server' | 'signed' | 'anonymous';
  allowed_origins: string[];
  created_at: string;
  archived_at: string | null;
}

export interface Feature {
  feature_key: string;
  name: string;
  default_model: string;
  allowed_models: string[];
  route_policy: string;
  developer_price_per_mtok_usd: string | null;
  open_fee_usd: string;
  max_output_tokens: number | null;
  model_aliases: Record<string, string>;
  fallback_models: string[];
  is_default: boolean;
  archived_at: string | null;
}

export interface Page<T> {
  data: T[];
  next_cursor?: string | null;
}

/** An app's trace export (`/v1/developer/apps/{id}/traces`, docs/traces.md): header values come masked. */
export interface TraceExport {
  public_app_id: string;
  endpoint: string;
  headers: Record<string, string>;
  enabled: boolean;
  created_at: string;
  updated_at: string;
  delivery: {
    state: 'pending' | 'ok' | 'failing';
    last_success_at: string | null;
    last_error_at: string | null;
    last_error: string | null;
    consecutive_failures: number;
  };
}
