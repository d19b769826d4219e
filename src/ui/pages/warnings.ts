import { WARNING_CODES } from '../../core/warnings.js';
import type { WarningReport } from '../../report/warning-report.js';
import { EMPTY, day, h, isolated, plural, type Html } from '../html.js';
import type { ViewerPaths } from '../paths.js';

/** `everme report`, as a page: the same report, filterable by warning code. */
export function warningsPage(paths: ViewerPaths, report: WarningReport, code: string): Html {
  const option = (value: string, label: string) => h`<option value="${value}"${value === code ? h` selected` : ''}>${label}</option>`;
  const rows = report.conversations.map(
    (c) => h`<tr>
<th scope="row">${c.conversationId ? h`<a href="${paths.conversation(c.conversationId)}">${c.sessionId ?? c.conversationId}</a>` : (c.sessionId ?? c.sessionDir ?? '(unknown session)')}</th>
<td>${day(c.createdAtMs)}</td>
<td>${c.workspaceDir ?? '-'}</td>
<td><ul>${c.warnings.map((w) => h`<li><code>${w.code}</code> ×${w.count}${w.samples.length > 0 ? h` <span class="muted">${w.samples.map((s) => `${s.file}:${s.line}`).join(', ')}</span>` : ''}</li>`)}</ul></td>
</tr>`,
  );
  const totals = Object.entries(report.totals).map(([k, n]) => h`<li><code>${k}</code> ${n}</li>`);
  return h`<h1>Warnings</h1>
<p class="muted">What the latest read of each session skipped, and why (codes, counts and file:line samples, never content): the same report as <code>everme report</code>.</p>
<form class="filters" method="get" action="${paths.to('/warnings')}">
<label for="code">Warning code<select id="code" name="code">${option('', 'All codes')}${WARNING_CODES.map((c) => option(c, c))}</select></label>
<button type="submit">Filter</button>
</form>
${
  report.conversations.length === 0
    ? h`<p id="no-warnings">No warnings${code ? h` with code <code>${code}</code>` : ''}: every conversation read cleanly.</p>`
    : h`<table id="warnings"><thead><tr><th scope="col">Session</th><th scope="col">Started</th><th scope="col">Workspace</th><th scope="col">Warnings</th></tr></thead><tbody>${rows}</tbody></table>
<h2>Totals</h2><ul>${totals}</ul>`
}
${report.excluded.length > 0 ? h`<h2>Excluded</h2><p>${plural(report.excluded.length, 'session')} never read past their workspace and never delivered:</p><ul>${report.excluded.map((r) => h`<li><code>${r.sessionId}</code> ${day(r.createdAtMs)} ${isolated(r.workspaceDir ?? '-')} by ${isolated(r.rule ?? '-')}</li>`)}</ul>` : EMPTY}
${report.workspaceUnknown.length > 0 ? h`<h2>Workspace unknown</h2><p>${plural(report.workspaceUnknown.length, 'session')} whose workspace neither the files nor a hook named (delivered; exclusions could not be checked).</p>` : EMPTY}
${report.forgotten > 0 ? h`<p>${plural(report.forgotten, 'conversation')} forgotten: <a href="${paths.to('/forgotten')}">see them</a>.</p>` : EMPTY}`;
}
