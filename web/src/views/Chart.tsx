// uPlot, loaded on demand: the failures-per-hour chart and the top errors' sparklines.
import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

interface Props {
  /** Bucket starts, ISO. */
  times: string[];
  counts: number[];
  width: number;
  height: number;
  /** A bare line, no axes or legend. */
  spark?: boolean;
  label: string;
}

export default function Chart({ times, counts, width, height, spark, label }: Props) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!box.current) return;
    const data: uPlot.AlignedData = [times.map((t) => Date.parse(t) / 1000), counts];
    const plot = new uPlot(
      {
        width,
        height,
        legend: { show: !spark },
        cursor: { show: !spark },
        axes: spark ? [{ show: false }, { show: false }] : [{}, { size: 50 }],
        scales: { x: { time: true } },
        series: [{}, { label: 'failures', stroke: '#b4432b', fill: 'rgba(180, 67, 43, 0.12)', width: spark ? 1.5 : 2, points: { show: false } }],
      },
      data,
      box.current,
    );
    return () => plot.destroy();
  }, [times, counts, width, height, spark]);
  return <div ref={box} role="img" aria-label={label} className={spark ? 'spark' : 'chart'} />;
}

/** Distinct on white and for the common colour blindnesses (Okabe–Ito). */
const PALETTE = ['#0072b2', '#d55e00', '#009e73', '#cc79a7', '#e69f00', '#56b4e9'];

interface LinesProps {
  /** Step starts, ISO. */
  times: string[];
  lines: { label: string; values: number[] }[];
  width: number;
  height: number;
  label: string;
}

/** Several lines over the same steps, with a legend: the delivery charts. */
export function LinesChart({ times, lines, width, height, label }: LinesProps) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!box.current) return;
    const data: uPlot.AlignedData = [times.map((t) => Date.parse(t) / 1000), ...lines.map((l) => l.values)];
    const plot = new uPlot(
      {
        width,
        height,
        axes: [{}, { size: 50 }],
        scales: { x: { time: true } },
        series: [{}, ...lines.map((l, i) => ({ label: l.label, stroke: PALETTE[i % PALETTE.length], width: 2, points: { show: false } }))],
      },
      data,
      box.current,
    );
    return () => plot.destroy();
  }, [times, lines, width, height]);
  return <div ref={box} role="img" aria-label={label} className="chart" />;
}
