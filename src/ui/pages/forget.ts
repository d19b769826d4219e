import type { ForgetCandidate, ForgetResult, Tombstone } from '../../forget/forget.js';
import { undoneSentences, type Undone, type UndoneWord } from '../../forget/undone.js';
import { EMPTY, day, h, plural, when, type Html } from '../html.js';
import { secretField } from '../layout.js';
import type { ViewerPaths } from '../paths.js';
import { withThousands } from '../../core/thousands.js';

function candidateRow(paths: ViewerPaths, c: ForgetCandidate): Html {
  return h`<tr>
<th scope="row">${c.storedMessages > 0 ? h`<a href="${paths.conversation(c.conversationId)}">${c.conversationId}</a>` : c.conversationId}</th>
<td>${day(c.createdAtMs)}</td>
<td>${c.workspaceDir ?? '(workspace unknown)'}</td>
<td class="num">${withThousands(c.storedMessages)}${c.storedMessages === 0 ? ' (not in the store)' : ''}</td>
<td>${c.sentToGateway ? 'yes: stays there' : 'no'}</td>
</tr>`;
}

function candidatesTable(paths: ViewerPaths, conversations: ForgetCandidate[]): Html {
  return h`<table id="forget-list"><thead><tr><th scope="col">Conversation</th><th scope="col">Started</th><th scope="col">Workspace</th><th scope="col" class="num">Stored messages</th><th scope="col">Sent to the gateway</th></tr></thead>
<tbody>${conversations.map((c) => candidateRow(paths, c))}</tbody></table>`;
}

function alreadyForgotten(paths: ViewerPaths, ids: string[]): Html {
  if (ids.length === 0) return EMPTY;
  return h`<p id="already-forgotten">Already forgotten: ${ids.map((id, i) => h`${i > 0 ? ', ' : ''}<code>${id}</code>`)}. See <a href="${paths.to('/forgotten')}">Forgotten conversations</a> to undo.</p>`;
}

/**
 * The dry run: what would go, with counts, and the one button that does it. `preview` undefined:
 * there is no store at all. `already`: named conversations that are forgotten already.
 */
export function forgetPreviewPage(paths: ViewerPaths, preview: ForgetResult | undefined, already: string[], secret: string): Html {
  if (!preview) return h`<h1>Forget</h1><p id="no-store">There is no embedded store on this machine, so there is nothing to forget.</p>`;
  const n = preview.conversations.length;
  if (n === 0 && already.length > 0) return h`<h1>Forget</h1>${alreadyForgotten(paths, already)}`;
  if (n === 0) return h`<h1>Forget</h1><p>Nothing selected: pick conversations in <a href="${paths.to('/search')}">search</a> or open one and choose “Forget this conversation”.</p>`;
  const messages = preview.conversations.reduce((sum, c) => sum + c.storedMessages, 0);
  return h`<h1>Forget ${plural(n, 'conversation')}?</h1>
<p id="forget-summary">${plural(n, 'conversation')}, <strong>${plural(messages, 'stored message')}</strong>, would be removed from the embedded store (messages, search index, recall context) and tombstoned: import, sync and the hook never deliver them again, to either sink.</p>
${candidatesTable(paths, preview.conversations)}
${alreadyForgotten(paths, already)}
${preview.gatewayNote ? h`<p class="banner" role="note">${preview.gatewayNote}</p>` : EMPTY}
<form method="post" action="${paths.to('/forget')}" class="actions">
${secretField(secret)}
${preview.conversations.map((c) => h`<input type="hidden" name="c" value="${c.conversationId}">`)}
<button type="submit" class="danger" id="confirm-forget">Forget ${plural(n, 'conversation')}</button>
<a href="${paths.to('/')}">Cancel</a>
</form>`;
}

function undoButton(paths: ViewerPaths, conversationId: string, secret: string): Html {
  return h`<form method="post" action="${paths.to('/forget/undo')}">${secretField(secret)}<input type="hidden" name="c" value="${conversationId}"><button type="submit" aria-label="Undo forgetting ${conversationId}">Undo</button></form>`;
}

export function forgetDonePage(paths: ViewerPaths, result: ForgetResult, secret: string): Html {
  const n = result.conversations.length;
  return h`<h1>Forgot ${plural(n, 'conversation')}</h1>
<p id="forget-done">${plural(result.removedMessages, 'message')} removed from the local store, search index and recall context. Tombstoned: import, sync and the hook will never deliver these again, even if their files change.</p>
${result.gatewayNote ? h`<p class="banner" role="note">${result.gatewayNote}</p>` : EMPTY}
${result.checkpointed === false ? h`<p class="muted">Another process is reading the store; the last deleted bytes leave the file once it closes.</p>` : EMPTY}
<ul>${result.conversations.map((c) => h`<li class="actions"><code>${c.conversationId}</code> ${undoButton(paths, c.conversationId, secret)}</li>`)}</ul>
<p class="muted">Undo lifts the tombstone (as <code>everme forget --undo</code> does); the next <code>everme sync</code>, or the hook, reads that session again from its files when they are under the data directory (else Undo says what brings it back).</p>`;
}

/** What an undo did, in the CLI's words (`undoneSentences`): ids, paths and commands in `<code>`. */
function undoneNote(undone: Undone, dataDir: string): Html {
  const word = (w: UndoneWord): Html => (typeof w === 'string' ? h`${w}` : h`<code>${'command' in w ? w.command : w.name}</code>`);
  return h`<p id="undo-done" role="status">${undoneSentences(undone, dataDir).map((sentence, i) => h`${i > 0 ? ' ' : ''}${sentence.map(word)}`)}</p>`;
}

export function forgottenPage(paths: ViewerPaths, tombstones: Tombstone[], secret: string, lifted?: { undone: Undone; dataDir: string }): Html {
  return h`<h1>Forgotten conversations</h1>
${lifted ? undoneNote(lifted.undone, lifted.dataDir) : EMPTY}
${
  tombstones.length === 0
    ? h`<p id="no-tombstones">Nothing is forgotten.</p>`
    : h`<table id="tombstones"><thead><tr><th scope="col">Conversation</th><th scope="col">Workspace</th><th scope="col">Forgotten</th><th scope="col">Undo</th></tr></thead><tbody>
${tombstones.map((t) => h`<tr><th scope="row"><code>${t.conversationId}</code></th><td>${t.workspaceDir ?? '(workspace unknown)'}</td><td>${when(t.forgottenAtMs)}</td><td>${undoButton(paths, t.conversationId, secret)}</td></tr>`)}
</tbody></table>`
}`;
}
