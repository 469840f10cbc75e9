/** The few SVG pieces the bench plots are drawn with: deterministic text, so a plot is a pure function of its data. */

export const FONT = 'font-family="system-ui, sans-serif" font-size="13"';

export function escapeText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** A number as the plots print it: 3 significant digits, k and M suffixes. */
export function shortNumber(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  // Number() drops the trailing zeros toPrecision keeps (1.00k -> 1k).
  if (n >= 1e6) return `${Number((n / 1e6).toPrecision(3))}M`;
  if (n >= 1e3) return `${Number((n / 1e3).toPrecision(3))}k`;
  return String(Number(n.toPrecision(3)));
}

/** Fixed decimals: the same data always prints the same file. */
export const px = (n: number): string => n.toFixed(1);

export function text(x: number, y: number, content: string, attributes = ''): string {
  return `<text x="${px(x)}" y="${px(y)}"${attributes === '' ? '' : ` ${attributes}`}>${escapeText(content)}</text>`;
}

/** An SVG document; `title` is what screen readers and tooltips say it shows. */
export function svgDocument(title: string, width: number, height: number, body: readonly string[]): string {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ` +
      `${height}" ${FONT}>`,
    `<title>${escapeText(title)}</title>`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    ...body,
    '</svg>',
    '',
  ].join('\n');
}

/** A 1-2-5 step that splits `max` into about `ticks` intervals. */
export function niceStep(max: number, ticks: number): number {
  const raw = max / ticks;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const normalized = raw / magnitude;
  return (normalized <= 1 ? 1 : normalized <= 2 ? 2 : normalized <= 5 ? 5 : 10) * magnitude;
}
