import type { WorkspaceSummary } from '../../store/viewer-store.js';
import { EMPTY, h, plural, type Html } from '../html.js';
import type { ViewerPaths } from '../paths.js';
import { gatewayNotice, type GatewayFailure } from './gateway-notice.js';
import { withThousands } from '../../core/thousands.js';

export interface AgentPreview {
  project: string;
  /** Exactly what the SessionStart hook prints for this workspace now; undefined: it prints nothing. */
  text?: string;
  budget: number;
  /** Why the hook prints nothing. */
  silence?: string;
  /** With a key: the gateway's context could not be fetched, so `text` is the embedded store's part alone. */
  gatewayFailure?: GatewayFailure;
}

export function agentPage(paths: ViewerPaths, workspaces: WorkspaceSummary[], preview: AgentPreview | undefined, gateway: boolean): Html {
  const projects = workspaces.flatMap((w) => (w.workspaceDir === undefined ? [] : [w.workspaceDir]));
  const selected = preview?.project ?? '';
  if (selected !== '' && !projects.includes(selected)) projects.unshift(selected);
  const body = !preview
    ? h`<p class="muted">Pick a project to see the block a new MiniMax Code session there is given.</p>`
    : preview.text === undefined
      ? h`<p id="agent-silent">The SessionStart hook would print nothing for <code>${preview.project}</code>: ${preview.silence ?? ''}.</p>`
      : h`${preview.gatewayFailure ? gatewayNotice(paths, preview.gatewayFailure, 'This is this machine’s part alone.', 'The EverMe gateway’s account-wide context could not be fetched, so the hook would print the project’s conversations from this machine without it.') : EMPTY}
<p id="agent-count"><strong>${plural(preview.text.length, 'character')}</strong> of the ${withThousands(preview.budget)}-character budget (<code>EVERME_RECALL_CHARS</code>).</p>
<pre id="agent-context" aria-label="SessionStart context">${preview.text}</pre>`;
  return h`<h1>What the agent sees</h1>
<p class="muted">The exact text the SessionStart hook would hand the model at the start of a new session in a project, computed now by the hook's own function with the same budget${gateway ? ' (with a gateway key: the gateway’s account-wide context)' : ''}.</p>
<form class="filters" method="get" action="${paths.to('/agent')}">
<label for="project">Project<select id="project" name="project">${h`<option value=""${selected === '' ? h` selected` : ''}>Choose a project</option>`}${projects.map((p) => h`<option value="${p}"${p === selected ? h` selected` : ''}>${p}</option>`)}</select></label>
<button type="submit">Show</button>
</form>
${projects.length === 0 ? h`<p>No project is recorded in the store yet.</p>` : EMPTY}
${body}`;
}
