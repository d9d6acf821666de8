/**
 * Structured JSON log lines on stderr. Callers pass only metadata (route, status, codes, counts):
 * never a body, a token, a header value or anything a prompt could be in.
 */
export type LogFields = Record<string, string | number | boolean | null | undefined>;

export interface Logger {
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

export type LogSink = (line: string) => void;

export function createLogger(sink: LogSink = (line) => process.stderr.write(`${line}\n`)): Logger {
  const write = (level: string, message: string, fields: LogFields = {}) =>
    sink(JSON.stringify({ time: new Date().toISOString(), level, service: 'faucet-bridge', msg: message, ...fields }));
  return {
    info: (message, fields) => write('info', message, fields),
    warn: (message, fields) => write('warn', message, fields),
    error: (message, fields) => write('error', message, fields),
  };
}
