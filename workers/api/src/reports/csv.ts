/**
 * CSV lines per RFC 4180 (comma, CRLF, quotes doubled inside quoted fields), with text cells
 * neutralised against spreadsheet formula injection: a cell that begins with = + - @, a tab or a
 * carriage return gets a leading apostrophe (OWASP "CSV injection"). Numeric columns that the
 * database computed are written as they are.
 */
export type CsvCell = string | number | boolean | null | undefined;

export interface CsvColumn<Row> {
  name: string;
  value: (row: Row) => CsvCell;
  /** `number`: a value the service computed (amount, count); never neutralised. Default `text`. */
  kind?: 'text' | 'number';
}

const FORMULA_START = /^[=+\-@\t\r]/;

export function neutraliseFormula(text: string): string {
  return FORMULA_START.test(text) ? `'${text}` : text;
}

export function quoteCsvField(text: string): string {
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

function cellText(cell: CsvCell, kind: 'text' | 'number'): string {
  if (cell === null || cell === undefined) return '';
  const text = String(cell);
  return quoteCsvField(kind === 'text' ? neutraliseFormula(text) : text);
}

export function csvHeader<Row>(columns: CsvColumn<Row>[]): string {
  return `${columns.map((column) => quoteCsvField(column.name)).join(',')}\r\n`;
}

export function csvLine<Row>(columns: CsvColumn<Row>[], row: Row): string {
  return `${columns.map((column) => cellText(column.value(row), column.kind ?? 'text')).join(',')}\r\n`;
}
