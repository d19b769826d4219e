import type Database from 'better-sqlite3';
import { FingerprintStore } from './fingerprint-store.js';
import type { SessionStateWrite } from './store-types.js';
import { WarningStore } from './warning-store.js';

/** Writes a finished session's state for one sink: its warnings and fingerprint. The caller owns the transaction around it. */
export class SessionStateWriter {
  private readonly warnings: WarningStore;
  private readonly fingerprints: FingerprintStore;

  constructor(db: Database.Database) {
    this.warnings = new WarningStore(db);
    this.fingerprints = new FingerprintStore(db);
  }

  write(write: SessionStateWrite): void {
    this.warnings.replace(write.warningsOwner, write.warnings);
    // Only a sink that notices things of its own (the gateway) keeps a set of them.
    if (write.sinkWarnings !== undefined) this.warnings.replace(write.warningsOwner, write.sinkWarnings, write.sinkName);
    this.fingerprints.set(write.sinkName, write.sessionId, write.fingerprint);
  }
}
