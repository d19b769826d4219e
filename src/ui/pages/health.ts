import { gatewayLine, type StatusReport } from '../../status/status.js';
import { EMPTY, h, type Html } from '../html.js';
import type { ViewerPaths } from '../paths.js';

function run(r: StatusReport['lastImport']): string {
  return r ? `${r.at} (${r.status ?? 'running'})` : 'never';
}

/** `everme status`, as a page; what is wrong comes first, each with the command that fixes it. */
export function healthPage(paths: ViewerPaths, s: StatusReport): Html {
  const issues = [...s.problems.map((p) => ({ what: p.what, fix: p.hint })), ...s.hooks.warnings.map((w) => ({ what: w.message, fix: '' }))];
  const verdict =
    issues.length === 0
      ? h`<p id="health-verdict" class="ok" role="status">Capture is working: hooks are installed and MiniMax Code has run them.</p>`
      : h`<div id="health-verdict" role="alert"><p><strong>Capture needs attention.</strong></p><ul id="health-problems">${issues.map(
          (i) => h`<li>${i.what}${i.fix ? h`<br><span class="muted">Fix:</span> ${i.fix}` : ''}</li>`,
        )}</ul></div>`;
  const routes = [...new Set(['plugin', 'markdown', ...s.hooks.arrivals.map((a) => a.route)])];
  const plugin = s.hooks.plugin;
  return h`<h1>Capture health</h1>
${verdict}
<h2>Hook routes</h2>
<table id="routes"><tbody>
<tr><th scope="row">Plugin (every event)</th><td>${plugin.state === 'installed' ? h`${plugin.path}${plugin.runnable ? '' : ' (broken: runtime missing)'}; ${plugin.enabled.replace('_', ' ')}` : plugin.state === 'conflict' ? `not installed: ${plugin.note ?? 'the path is taken'}` : 'not installed'}</td></tr>
<tr><th scope="row">Markdown hooks (tool calls)</th><td>${s.hooks.markdown.installed.length === 0 ? 'not installed' : s.hooks.markdown.installed.map((m) => `${m.event}${m.runnable ? '' : ' (broken)'}`).join(', ')}</td></tr>
</tbody></table>
<h2>Events received per route</h2>
<table id="arrivals"><thead><tr><th scope="col">Route</th><th scope="col">Events</th></tr></thead><tbody>
${routes.map((route) => {
  const got = s.hooks.arrivals.filter((a) => a.route === route);
  return h`<tr><th scope="row">${route}</th><td>${got.length === 0 ? 'none received' : got.map((a) => `${a.event} ×${a.count} (last ${a.lastAt})`).join(', ')}</td></tr>`;
})}
</tbody></table>
<h2>Runs and store</h2>
<table id="facts"><tbody>
<tr><th scope="row">Data dir</th><td>${s.dataDir} (${s.sessions} sessions found)</td></tr>
<tr><th scope="row">Sink</th><td>${s.sink}${s.gateway.configured ? h` → ${s.gateway.apiBase ?? ''} ${gatewayLine(s.gateway)}` : EMPTY}</td></tr>
<tr><th scope="row">Credential</th><td>${s.credential ? `${s.credential.variable} ${s.credential.masked} from ${s.credential.source}` : 'none (the local store is used)'}</td></tr>
<tr><th scope="row">Last import</th><td>${run(s.lastImport)}</td></tr>
<tr><th scope="row">Last sync</th><td>${run(s.lastSync)}</td></tr>
<tr><th scope="row">Last hook run</th><td>${run(s.lastHookRun)}</td></tr>
<tr><th scope="row">Hook latency</th><td>${s.hooks.latencyMs.count === 0 ? 'no hook runs yet' : `p50 ${s.hooks.latencyMs.p50 ?? '-'} ms, p95 ${s.hooks.latencyMs.p95 ?? '-'} ms over ${s.hooks.latencyMs.count} runs`}</td></tr>
<tr><th scope="row">Hook outcomes</th><td>${Object.keys(s.hooks.outcomes).length === 0 ? 'none' : Object.entries(s.hooks.outcomes).map(([k, v]) => `${k} ${v}`).join(', ')}</td></tr>
<tr><th scope="row">MCP server</th><td>${s.mcp.registered ? 'registered' : 'not registered'} in ${s.mcp.file}</td></tr>
<tr><th scope="row">Store</th><td>${s.store.file} (${(s.store.bytes / 1024 / 1024).toFixed(1)} MiB, ${s.store.conversations} conversations, ${s.store.messages} messages)</td></tr>
<tr><th scope="row">Warnings</th><td>${s.warnings}${s.warnings > 0 ? h` (<a href="${paths.to('/warnings')}">see them</a>)` : ''}</td></tr>
</tbody></table>`;
}
