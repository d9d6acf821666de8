/**
 * A uPlot time-series chart for daily figures (docs/console.md says why uPlot). The canvas is hidden
 * from assistive technology: every chart is shown with a table of the same numbers (`ChartFigure`).
 * Colours come from the theme's CSS variables, so the chart is redrawn when the theme changes.
 */
import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface Series {
  label: string;
  /** Null: no value that day (a gap in the line). */
  values: Array<number | null>;
  /** CSS variable with the line colour. */
  color: '--series-1' | '--series-2';
}

interface ChartProps {
  /** Days as YYYY-MM-DD (x axis). */
  days: string[];
  series: Series[];
  /** Formats a y value on the axis and in the legend. */
  format(value: number): string;
  theme: string;
}

const dayToSeconds = (day: string) => Date.UTC(Number(day.slice(0, 4)), Number(day.slice(5, 7)) - 1, Number(day.slice(8, 10))) / 1000;

export function Chart({ days, series, format, theme }: ChartProps) {
  const box = useRef<HTMLDivElement>(null);
  // biome-ignore lint/correctness/useExhaustiveDependencies: a new theme means new CSS variable values, read inside.
  useEffect(() => {
    const element = box.current;
    if (!element) return;
    const style = getComputedStyle(document.documentElement);
    const color = (name: string) => style.getPropertyValue(name).trim() || '#888';
    const axis = { stroke: color('--muted'), grid: { stroke: color('--border'), width: 1 }, ticks: { stroke: color('--border') } };
    const plot = new uPlot(
      {
        width: Math.max(element.clientWidth, 240),
        height: 200,
        tzDate: (seconds) => uPlot.tzDate(new Date(seconds * 1000), 'UTC'),
        scales: { x: { time: true } },
        axes: [axis, { ...axis, size: 70, values: (_plot, ticks) => ticks.map(format) }],
        series: [
          { value: (_plot, seconds) => (seconds == null ? '' : new Date(seconds * 1000).toISOString().slice(0, 10)) },
          ...series.map((one) => ({
            label: one.label,
            stroke: color(one.color),
            width: 2,
            points: { show: days.length <= 31 },
            value: (_plot: uPlot, value: number | null) => (value == null ? '' : format(value)),
          })),
        ],
      },
      [days.map(dayToSeconds), ...series.map((one) => one.values)],
      element,
    );
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(element.clientWidth, 240), height: 200 }));
    resize.observe(element);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [days, series, format, theme]);
  return <div ref={box} className="chart" aria-hidden="true" />;
}
