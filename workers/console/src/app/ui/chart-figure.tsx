/**
 * A daily chart with its text alternative: the uPlot canvas (hidden from assistive technology) and,
 * behind a disclosure, a table of the same numbers, one row per day, each value as shown to a reader.
 */
import { useMemo } from 'react';
import { useTheme } from '../theme.tsx';
import { Chart, type Series } from './Chart.tsx';
import { ScrollTable } from './scroll-table.tsx';

export interface FigureSeries<Row> {
  label: string;
  color: Series['color'];
  /** The chart's y value (null: a gap); never what is shown in the table. */
  value(row: Row): number | null;
  shown(row: Row): string;
}

export function ChartFigure<Row extends { day: string }>({
  title,
  caption,
  rows,
  series,
  format,
  columns = series,
}: {
  title: string;
  caption: string;
  rows: Row[];
  series: Array<FigureSeries<Row>>;
  format(value: number): string;
  /** The table's columns when they are more than the lines drawn (default: the series). */
  columns?: Array<Pick<FigureSeries<Row>, 'label' | 'shown'>>;
}) {
  const { theme } = useTheme();
  const days = useMemo(() => rows.map((row) => row.day), [rows]);
  const lines = useMemo(() => series.map((one) => ({ label: one.label, color: one.color, values: rows.map(one.value) })), [series, rows]);
  return (
    <figure style={{ margin: 0 }} aria-label={`${title} per day`}>
      <Chart days={days} series={lines} format={format} theme={theme} />
      <details>
        <summary>{title} per day as a table</summary>
        <ScrollTable label={`${title} per day`}>
          <table data-chart={title}>
            <caption className="sr-only">{caption}</caption>
            <thead>
              <tr>
                <th scope="col">Day</th>
                {columns.map((one) => (
                  <th key={one.label} scope="col" className="num">
                    {one.label}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {rows.map((row) => (
                <tr key={row.day}>
                  <th scope="row">{row.day}</th>
                  {columns.map((one) => (
                    <td key={one.label} className="num">
                      {one.shown(row)}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </ScrollTable>
      </details>
    </figure>
  );
}
