/**
 * Structured JSON log lines. Callers pass only what is safe to keep: identifiers, codes, counts.
 * Keys that name secrets are dropped here as a last line of defence.
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFields = Record<string, string | number | boolean | null | undefined>;

const order: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };
const forbiddenKey = /token|secret|password|authorization|api_?key|prompt|content|external_user_id/i;

export interface Logger {
  log(level: LogLevel, message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

export function createLogger(base: LogFields, minimum: string | undefined): Logger {
  const threshold = order[(minimum as LogLevel) ?? 'info'] ?? order.info;
  const log = (level: LogLevel, message: string, fields: LogFields = {}) => {
    if (order[level] < threshold) return;
    const line: LogFields = { ts: new Date().toISOString(), level, message, ...base };
    for (const [key, value] of Object.entries(fields)) {
      if (!forbiddenKey.test(key)) line[key] = value;
    }
    console.log(JSON.stringify(line));
  };
  return {
    log,
    info: (message, fields) => log('info', message, fields),
    warn: (message, fields) => log('warn', message, fields),
    error: (message, fields) => log('error', message, fields),
  };
}
