import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { UsageReport } from '../usage/usage-report-schema';

export interface OutboxEntry {
  version: 1;
  report: UsageReport;
  /** Needed to forward the report; the reason every outbox file is private to the user (0600). */
  session_token: string;
  queued_at: string;
  attempts: number;
  next_attempt_at: string;
  last_error?: string;
}

export interface DeadLetter extends Omit<OutboxEntry, 'session_token'> {
  dead_at: string;
  reason: string;
}

/**
 * Usage reports on disk, one file per request ID, written atomically (temp file, fsync, rename),
 * so a report the bridge answered 202 for survives a crash or restart. Reports the control API
 * refused for good move to `dead/` with the reason, without the session token.
 */
export class OutboxStore {
  readonly deadDirectory: string;

  constructor(readonly directory: string) {
    this.deadDirectory = join(directory, 'dead');
  }

  async init(): Promise<void> {
    // Created private; an existing directory is left as it is (never chmod a folder like /tmp):
    // the entries themselves are 0600.
    await mkdir(this.deadDirectory, { recursive: true, mode: 0o700 });
    // Temp files left by a crash in the middle of a write never became entries.
    for (const name of await readdir(this.directory)) {
      if (name.endsWith('.tmp')) await rm(join(this.directory, name), { force: true });
    }
  }

  async put(entry: OutboxEntry): Promise<void> {
    await writeAtomically(this.directory, fileNameFor(entry.report.request_id), JSON.stringify(entry));
  }

  async list(): Promise<OutboxEntry[]> {
    const entries: OutboxEntry[] = [];
    for (const name of await readdir(this.directory)) {
      if (!name.endsWith('.json')) continue;
      try {
        entries.push(JSON.parse(await readFile(join(this.directory, name), 'utf8')) as OutboxEntry);
      } catch {
        // A file that vanished (forwarded meanwhile) or cannot be parsed is skipped, never fatal.
      }
    }
    return entries;
  }

  async remove(requestId: string): Promise<void> {
    await rm(join(this.directory, fileNameFor(requestId)), { force: true });
  }

  async deadLetter(entry: OutboxEntry, reason: string): Promise<void> {
    const { session_token: _token, ...kept } = entry;
    const letter: DeadLetter = { ...kept, dead_at: new Date().toISOString(), reason };
    await writeAtomically(this.deadDirectory, fileNameFor(entry.report.request_id), JSON.stringify(letter));
    await this.remove(entry.report.request_id);
  }

  async listDead(): Promise<DeadLetter[]> {
    const letters: DeadLetter[] = [];
    for (const name of await readdir(this.deadDirectory)) {
      if (!name.endsWith('.json')) continue;
      try {
        letters.push(JSON.parse(await readFile(join(this.deadDirectory, name), 'utf8')) as DeadLetter);
      } catch {
        // Unreadable dead letters are left for a human; they must not break diagnostics.
      }
    }
    return letters;
  }

  async pendingCount(): Promise<number> {
    return (await readdir(this.directory)).filter((name) => name.endsWith('.json')).length;
  }
}

/** Request IDs may hold `:` (not allowed in Windows file names), so files are named by hash. */
function fileNameFor(requestId: string): string {
  return `${createHash('sha256').update(requestId).digest('hex').slice(0, 40)}.json`;
}

async function writeAtomically(directory: string, name: string, text: string): Promise<void> {
  const temporary = join(directory, `.${name}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(temporary, 'wx', 0o600);
  try {
    await handle.writeFile(text, 'utf8');
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temporary, join(directory, name));
  await syncDirectory(directory);
}

/** Makes the rename itself durable; directories cannot be opened for sync on Windows. */
async function syncDirectory(directory: string): Promise<void> {
  if (process.platform === 'win32') return;
  const handle = await open(directory, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
