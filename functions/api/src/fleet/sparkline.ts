// The latency sparkline: an inline SVG polyline over the last reported latencies (health history). The
// browser script draws the same shape with the same arithmetic when rows update.

export const SPARK_W = 80;
export const SPARK_H = 18;

export function sparkPoints(values: readonly number[]): string {
  if (values.length === 0) return '';
  const max = Math.max(...values);
  const min = Math.min(...values);
  const span = max - min || 1;
  const step = values.length > 1 ? SPARK_W / (values.length - 1) : 0;
  return values
    .map((v, i) => {
      const x = values.length > 1 ? i * step : SPARK_W;
      const y = SPARK_H - 2 - ((v - min) / span) * (SPARK_H - 4);
      return `${x.toFixed(1)},${y.toFixed(1)}`;
    })
    .join(' ');
}

export function sparkline(values: readonly number[]): string {
  if (values.length === 0) return '';
  const pts = sparkPoints(values);
  const dot =
    values.length === 1 ? `<circle cx="${pts.split(',')[0]}" cy="${pts.split(',')[1]}" r="2"/>` : '';
  return `<svg class="spark" width="${SPARK_W}" height="${SPARK_H}" viewBox="0 0 ${SPARK_W} ${SPARK_H}" aria-hidden="true"><polyline points="${pts}"/>${dot}</svg>`;
}
