import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { csvHeader, csvLine, neutraliseFormula, type CsvColumn } from './csv.ts';
import { parseReportRange } from './report-range.ts';

describe('neutraliseFormula', () => {
  it.each(['=1+1', '+1', '-1', '@SUM(A1)', '\tcmd', '\rcmd'])('prefixes %j with an apostrophe', (text) => {
    expect(neutraliseFormula(text)).toBe(`'${text}`);
  });
  it.each(['plain', '1+1', ' =x', "'=x", ''])('leaves %j alone', (text) => {
    expect(neutraliseFormula(text)).toBe(text);
  });
});

describe('csvLine', () => {
  const columns: CsvColumn<{ label: string; amount: string | null }>[] = [
    { name: 'label', value: (row) => row.label },
    { name: 'amount', value: (row) => row.amount, kind: 'number' },
  ];

  it('quotes per RFC 4180 and round-trips through a standard parser', () => {
    const rows = [
      { label: 'a "quoted", text\r\nwith lines', amount: '1.00000000' },
      { label: '=cmd|"/C calc"!A0', amount: '-2.50000000' },
      { label: 'empty amount', amount: null },
    ];
    const text = csvHeader(columns) + rows.map((row) => csvLine(columns, row)).join('');
    expect(text.endsWith('\r\n')).toBe(true);
    expect(parse(text)).toEqual([
      ['label', 'amount'],
      ['a "quoted", text\r\nwith lines', '1.00000000'],
      [`'=cmd|"/C calc"!A0`, '-2.50000000'],
      ['empty amount', ''],
    ]);
  });
});

describe('parseReportRange', () => {
  it('turns dates into UTC midnights and keeps offsets', () => {
    expect(parseReportRange({ from: '2025-03-01', to: '2025-03-02T01:00:00+02:00' })).toEqual({
      from: '2025-03-01T00:00:00.000Z',
      to: '2025-03-01T23:00:00.000Z',
    });
    expect(parseReportRange({})).toEqual({ from: null, to: null });
  });
  it.each([
    { from: '2025-13-01' },
    { from: '2025-02-29' },
    { to: '2025-03-01 10:00' },
    { from: '2025-03-02', to: '2025-03-01' },
    { from: '1e12' },
  ])('refuses %j', (query) => {
    expect(() => parseReportRange(query)).toThrow(expect.objectContaining({ code: 'invalid_request' }));
  });
});
