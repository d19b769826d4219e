import { existsSync } from 'node:fs';
import type Database from 'better-sqlite3';
import { defaultSink, type Settings, type SinkName } from '../config/settings.js';
import { EvermeError } from '../core/errors.js';
import { openRecall, type Recall } from '../recall/recall.js';
import { databasePath, openDatabase } from '../store/database.js';
import { ViewerStore } from '../store/viewer-store.js';

/**
 * What every page reads through: the settings the commands would load, the recall side of the sink
 * `everme search` and `mem_search` would use, and a read-only connection to the embedded store.
 * The store may not exist yet when the viewer starts (nothing imported): each request tries again,
 * so an import run meanwhile shows up on the next page load.
 */
export class ViewerData {
  readonly sink: SinkName;
  readonly recall: Recall;
  private db?: Database.Database;
  private store?: ViewerStore;

  constructor(readonly settings: Settings) {
    this.sink = defaultSink(settings);
    this.recall = openRecall(settings, this.sink);
  }

  /**
   * Opens the store before the first page asks (bringing an older one up to date), so that page
   * does not pay for it. A store that cannot be opened is left for the pages to report.
   */
  warm(): void {
    try {
      this.local();
    } catch {
      // each page tries again and shows the error
    }
  }

  /** The embedded store, or undefined when there is none yet. */
  local(): ViewerStore | undefined {
    if (this.store) return this.store;
    // A store an older everme wrote lacks what the viewer reads (message_days, migration 10): one
    // read-write open brings it up to date (the first time only: a count by day of its messages),
    // as any import, sync or hook would; after that the viewer only reads.
    if (!existsSync(databasePath(this.settings.stateDir))) return undefined;
    openDatabase(this.settings.stateDir).close();
    try {
      this.db = openDatabase(this.settings.stateDir, { readonly: true });
    } catch (err) {
      if (err instanceof EvermeError && err.code === 'database_missing') return undefined;
      throw err;
    }
    this.store = new ViewerStore(this.db);
    return this.store;
  }

  /** Whether memories also go to the hosted gateway (a credential is configured). */
  get gateway(): boolean {
    return this.sink === 'everme';
  }

  close(): void {
    this.recall.close();
    this.db?.close();
    this.db = undefined;
    this.store = undefined;
  }
}
