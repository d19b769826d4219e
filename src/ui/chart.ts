import type { DayCount } from '../store/viewer-store.js';
import { day, h, plural, type Html } from './html.js';

const BAR = 8;
const GAP = 2;
const HEIGHT = 120;
const TOP = 14;
const BOTTOM = 18;

/**
 * Messages per day as an inline SVG: drawn here, no chart library, nothing fetched. Each bar has a
 * `<title>` (its day and count) and the figure an accessible summary; a table with the same numbers
 * follows it for screen readers and copying.
 */
export function messagesChart(days: DayCount[]): Html {
  const max = Math.max(1, ...days.map((d) => d.messages));
  const total = days.reduce((sum, d) => sum + d.messages, 0);
  const width = days.length * (BAR + GAP);
  const plot = HEIGHT - TOP - BOTTOM;
  const bars = days.map((d, i) => {
    const height = d.messages === 0 ? 0 : Math.max(1, Math.round((d.messages / max) * plot));
    const x = i * (BAR + GAP);
    return h`<rect class="bar" x="${x}" y="${TOP + plot - height}" width="${BAR}" height="${height}" data-day="${day(d.dayMs)}" data-messages="${d.messages}"><title>${day(d.dayMs)}: ${plural(d.messages, 'message')}</title></rect>`;
  });
  const first = days[0];
  const last = days.at(-1);
  const label = `Messages per day, ${first ? day(first.dayMs) : ''} to ${last ? day(last.dayMs) : ''}: ${plural(total, 'message')}, at most ${plural(max === 1 && total === 0 ? 0 : max, 'message')} on one day`;
  return h`<figure>
<svg class="chart" id="activity-chart" role="img" aria-label="${label}" viewBox="0 0 ${width} ${HEIGHT}" width="${width}" height="${HEIGHT}" xmlns="http://www.w3.org/2000/svg">
<line class="axis" x1="0" y1="${TOP + plot + 0.5}" x2="${width}" y2="${TOP + plot + 0.5}"/>
<text x="0" y="10">${plural(max === 1 && total === 0 ? 0 : max, 'message')} / day max</text>
${bars}
<text x="0" y="${HEIGHT - 4}">${first ? day(first.dayMs) : ''}</text>
<text x="${width}" y="${HEIGHT - 4}" text-anchor="end">${last ? day(last.dayMs) : ''}</text>
</svg>
<figcaption>${label}.</figcaption>
</figure>`;
}
