import { redactOutput } from '../../core/redact-output.js';
import { h, type Html } from '../html.js';
import type { ViewerPaths } from '../paths.js';

/** What the recall layer reports when the gateway's part of an answer failed (`RecallSearch.gatewayFailure`). */
export interface GatewayFailure {
  type: string;
  message: string;
}

/**
 * Said where a page shows the embedded store's part alone because the EverMe gateway failed:
 * without it the user takes a partial answer for the whole one. A note, not an alarm (the store's
 * part is right, only incomplete), so `role="status"` and neutral colours, never the warning banner.
 * The gateway client already scrubs its key from the message; it is masked again here, as every
 * page does with anything an error carries.
 */
export function gatewayNotice(paths: ViewerPaths, failure: GatewayFailure, lead: string, missing: string): Html {
  return h`<div id="gateway-failure" class="notice" role="status" data-failure="${failure.type}">
<p><strong>${lead}</strong> ${missing}</p>
<p class="muted">What failed: ${redactOutput(failure.message)}. <a href="${paths.to('/health')}">Capture health</a> shows whether the gateway answers now.</p>
</div>`;
}
