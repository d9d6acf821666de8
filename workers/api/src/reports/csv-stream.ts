/**
 * A CSV report streamed from the database page by page (keyset pagination), so a large export never
 * sits in memory. The stream retains the request's database handle until it has been read
 * (or cancelled), so the pool outlives the handler's return.
 */
import type { RequestDatabase } from '#shared/db.ts';
import type { SqlDatabase } from '#shared/query.ts';
import { csvHeader, csvLine, type CsvColumn } from './csv.ts';
import type { ReportScope } from './report-range.ts';

export const REPORT_PAGE_SIZE = 500;

export interface PagedReport<Row> {
  columns: CsvColumn<Row>[];
  /** Rows of the scope after `after` (null: from the start) in a stable order, at most `limit`. */
  page(db: SqlDatabase, scope: ReportScope, after: Row | null, limit: number): Promise<Row[]>;
}

/** The response headers of a CSV export named `name`.csv. */
export function csvHeaders(name: string): Record<string, string> {
  return {
    'content-type': 'text/csv; charset=utf-8',
    'content-disposition': `attachment; filename="${name}.csv"`,
    'cache-control': 'no-store',
  };
}

/** Reads the first page before answering (so a failure is still an error response), then streams. */
export async function streamReport<Row>(
  database: RequestDatabase,
  report: PagedReport<Row>,
  scope: ReportScope,
  pageSize = REPORT_PAGE_SIZE,
): Promise<ReadableStream<Uint8Array>> {
  const release = database.retain();
  const close = async () => release();
  let rows: Row[];
  try {
    rows = await report.page(database.db, scope, null, pageSize);
  } catch (error) {
    await close();
    throw error;
  }
  const encoder = new TextEncoder();
  let headerSent = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        if (!headerSent) {
          headerSent = true;
          controller.enqueue(encoder.encode(csvHeader(report.columns)));
        }
        if (rows.length > 0) controller.enqueue(encoder.encode(rows.map((row) => csvLine(report.columns, row)).join('')));
        if (rows.length < pageSize) {
          await close();
          controller.close();
          return;
        }
        rows = await report.page(database.db, scope, rows[rows.length - 1]!, pageSize);
      } catch (error) {
        await close();
        controller.error(error);
      }
    },
    async cancel() {
      await close();
    },
  });
}
