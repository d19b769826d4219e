import type { ConversationSummary } from '../../store/conversation-list.js';
import type { DayCount, WorkspaceSummary } from '../../store/viewer-store.js';
import { messagesChart } from '../chart.js';
import { EMPTY, h, isolated, plural, when, type Html } from '../html.js';
import { withThousands } from '../../core/thousands.js';
import type { ViewerPaths } from '../paths.js';

/**
 * How a conversation is named in lists: the title MiniMax Code's session index gave it (#30), else
 * its first request (the store keeps it for recall), else its id.
 */
export function conversationLabel(c: ConversationSummary): string {
  return c.title ?? c.firstUserText ?? c.conversationId;
}

export const UNKNOWN_WORKSPACE = 'Workspace unknown';

export function projectsPage(paths: ViewerPaths, workspaces: WorkspaceSummary[], days: DayCount[], storeMissing: boolean): Html {
  if (storeMissing) {
    return h`<h1>Projects</h1>
<p>No memories yet: nothing has been imported into the embedded store on this machine.</p>
<p>Run <code>everme import --since YYYY-MM-DD</code> (or <code>everme sync</code>), then reload this page.</p>`;
  }
  const rows = workspaces.map(
    (w) => h`<tr>
<th scope="row"><a href="${paths.project(w.workspaceDir)}">${w.workspaceDir ?? UNKNOWN_WORKSPACE}</a>${w.workspaceDir === undefined ? h` <span class="muted">(sessions whose workspace nobody recorded)</span>` : ''}</th>
<td class="num">${withThousands(w.conversations)}</td>
<td class="num">${withThousands(w.messages)}</td>
<td>${when(w.lastActivityMs)}</td>
</tr>`,
  );
  return h`<h1>Projects</h1>
<h2 id="activity">Messages per day, last ${days.length} days</h2>
${messagesChart(days)}
<h2 id="workspaces">Workspaces</h2>
${
  workspaces.length === 0
    ? h`<p>The store holds no conversations.</p>`
    : h`<table id="projects" aria-describedby="workspaces">
<thead><tr><th scope="col">Workspace</th><th scope="col" class="num">Conversations</th><th scope="col" class="num">Messages</th><th scope="col">Last activity</th></tr></thead>
<tbody>${rows}</tbody>
</table>`
}`;
}

/** Where a project's page of conversations sits in its whole list, newest first. */
export interface ProjectPageWindow {
  offset: number;
  size: number;
  /** Older conversations follow this page. */
  older: boolean;
}

export function projectPage(paths: ViewerPaths, workspaceDir: string | undefined, conversations: ConversationSummary[], page: ProjectPageWindow): Html {
  const title = workspaceDir ?? UNKNOWN_WORKSPACE;
  const rows = conversations.map(
    (c) => h`<tr>
<th scope="row"><a href="${paths.conversation(c.conversationId)}">${conversationLabel(c)}</a><br><span class="muted">${isolated(c.conversationId)}${c.workspaceDir !== undefined && c.workspaceDir !== workspaceDir ? h` · ${isolated(c.workspaceDir)}` : ''}</span></th>
<td class="num">${withThousands(c.messageCount)}</td>
<td>${when(c.updatedAtMs ?? c.createdAtMs)}</td>
</tr>`,
  );
  return h`<h1>${title}</h1>
<div class="actions">
${workspaceDir === undefined ? '' : h`<a href="${paths.to('/agent', `project=${encodeURIComponent(workspaceDir)}`)}">What the agent sees at session start here</a> <a href="${paths.to('/search', `project=${encodeURIComponent(workspaceDir)}`)}">Search this project</a>`}
</div>
<p class="muted">${shownRange(conversations.length, page)}, most recently active first${workspaceDir === undefined ? '' : ', this directory and those below it'}.</p>
<table id="conversations">
<thead><tr><th scope="col">Conversation</th><th scope="col" class="num">Messages</th><th scope="col">Last activity</th></tr></thead>
<tbody>${rows}</tbody>
</table>
${pageLinks(paths, workspaceDir, page)}`;
}

function shownRange(shown: number, page: ProjectPageWindow): string {
  if (page.offset === 0 && !page.older) return plural(shown, 'conversation');
  return shown === 0 ? 'No conversations on this page' : `Conversations ${withThousands(page.offset + 1)}–${withThousands(page.offset + shown)}`;
}

function pageLinks(paths: ViewerPaths, workspaceDir: string | undefined, page: ProjectPageWindow): Html {
  if (page.offset === 0 && !page.older) return EMPTY;
  const at = (offset: number): string => `${paths.project(workspaceDir)}${offset > 0 ? `&offset=${offset}` : ''}`;
  const newer = page.offset > 0 ? h`<a href="${at(Math.max(0, page.offset - page.size))}" rel="prev">Newer conversations</a>` : EMPTY;
  const older = page.older ? h`<a href="${at(page.offset + page.size)}" rel="next">Older conversations</a>` : EMPTY;
  return h`<nav class="actions" aria-label="Pages of conversations">${newer} ${older}</nav>`;
}
