import type { AgentMessage } from '../../core/agent-message.js';
import type { ReportConversation } from '../../report/warning-report.js';
import type { ConversationSummary } from '../../store/conversation-list.js';
import type { MessageWindow } from '../../store/viewer-store.js';
import { EMPTY, h, plural, storedText, when, type Html } from '../html.js';
import type { ViewerPaths } from '../paths.js';
import { conversationLabel, UNKNOWN_WORKSPACE } from './projects.js';

export interface ConversationView {
  conversation: ConversationSummary;
  window: MessageWindow;
  pageSize: number;
  /** The message a search hit opened. */
  targetId?: number;
  warnings: ReportConversation[];
  sentToGateway: boolean;
}

function prettyArguments(json: string): string {
  try {
    return JSON.stringify(JSON.parse(json) as unknown, null, 2);
  } catch {
    return json;
  }
}

/** `open`: the message a search result opened the page at, its tool parts unfolded so the match shows. */
function messageBody(message: AgentMessage, toolNames: Map<string, string>, open: boolean): Html {
  const unfolded = open ? h` open` : EMPTY;
  switch (message.role) {
    case 'user':
      return h`<div class="text">${storedText(message.content)}</div>`;
    case 'assistant': {
      const calls = (message.toolCalls ?? []).map((call) => {
        toolNames.set(call.id, call.name);
        return h`<details class="tool-call"${unfolded}><summary>tool call: <strong>${call.name}</strong></summary><pre>${storedText(prettyArguments(call.arguments))}</pre></details>`;
      });
      return h`${message.content === undefined ? EMPTY : h`<div class="text">${storedText(message.content)}</div>`}${calls}`;
    }
    case 'tool': {
      const name = toolNames.get(message.toolCallId);
      return h`<details class="tool-result"${unfolded}><summary>tool result${name === undefined ? '' : h`: <strong>${name}</strong>`} <span class="muted">(${plural(message.content.length, 'character')})</span></summary><pre>${storedText(message.content)}</pre></details>`;
    }
  }
}

function warningsBlock(warnings: ReportConversation[]): Html {
  if (warnings.length === 0) return EMPTY;
  const items = warnings.map(
    (c) => h`<div class="warnings" role="note">
<p><strong>Warnings</strong> from the latest read of session <code>${c.sessionId ?? '(unknown session)'}</code>, started ${when(c.createdAtMs)}${c.historyFile ? h` (${c.historyFile})` : ''}:</p>
<ul>${c.warnings.map((w) => h`<li><code>${w.code}</code> ×${w.count}${w.samples.length > 0 ? h` at ${w.samples.map((s) => `${s.file}:${s.line}`).join(', ')}` : ''}</li>`)}</ul>
</div>`,
  );
  return h`${items}`;
}

export function conversationPage(paths: ViewerPaths, view: ConversationView): Html {
  const { conversation: c, window } = view;
  const toolNames = new Map<string, string>();
  const messages = window.messages.map(({ id, message }) => {
    const target = id === view.targetId;
    return h`<article class="message ${message.role}${target ? ' target' : ''}" id="m${id}" aria-label="${message.role} message"${target ? h` tabindex="-1" aria-current="true"` : ''}>
<div class="who">${message.role}<time datetime="${new Date(message.timestamp).toISOString()}">${when(message.timestamp)}</time></div>
${messageBody(message, toolNames, target)}
</article>`;
  });
  const base = paths.conversation(c.conversationId);
  const earlier = window.before > 0 ? h`<a href="${base}?offset=${Math.max(0, window.before - view.pageSize)}">${plural(window.before, 'earlier message')}</a>` : EMPTY;
  const later = window.after > 0 ? h`<a href="${base}?offset=${window.before + window.messages.length}">${plural(window.after, 'later message')}</a>` : EMPTY;
  return h`<h1>${conversationLabel(c)}</h1>
<p class="muted"><code>${c.conversationId}</code> · session <code>${c.sessionId}</code> ·
<a href="${paths.project(c.workspaceDir)}">${c.workspaceDir ?? UNKNOWN_WORKSPACE}</a> ·
${plural(c.messageCount, 'message')} · ${when(c.createdAtMs)} to ${when(c.updatedAtMs)}</p>
<p>${view.sentToGateway ? h`<strong>Sent to the EverMe gateway.</strong> Forgetting removes it from this machine and stops further sending; what the gateway received stays there.` : 'Not sent to the EverMe gateway: it is held on this machine only.'}</p>
<form class="actions" method="get" action="${paths.to('/forget')}">
<input type="hidden" name="c" value="${c.conversationId}">
<button type="submit" class="danger">Forget this conversation…</button>
</form>
${warningsBlock(view.warnings)}
<nav class="actions" aria-label="Earlier messages">${earlier}</nav>
<div class="messages">${messages}</div>
<nav class="actions" aria-label="Later messages">${later}</nav>`;
}
