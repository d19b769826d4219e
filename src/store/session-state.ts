import type { StateStore } from './state-store.js';
import type { SessionStateWrite } from './store-types.js';

/** Writes a finished session's warnings and fingerprint; the caller owns the transaction around it. */
export function writeSessionState(state: StateStore, write: SessionStateWrite): void {
  state.replaceWarnings(write.warningsOwner, write.warnings);
  state.setFingerprint(write.sinkName, write.sessionId, write.fingerprint);
}
