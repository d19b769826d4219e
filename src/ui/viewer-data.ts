import type Database from 'better-sqlite3';
import { defaultSink, type Settings, type SinkName } from '../config/settings.js';
import { EvermeError } from '../core/errors.js';
import { openRecall, type Recall } from '../recall/recall.js';
import { openDatabase } from '../store/database.js';
import { FollowedStore, openReadonlyDatabase } from '../store/database-reader.js';
import { ViewerStore } from '../store/viewer-store.js';

/**
 * What every page reads through: the settings the commands would load, the recall side of the sink
 * `everme search` and `mem_search` would use, and a read-only connection to the embedded store.
 * The store may not exist yet when the viewer starts (nothing imported): each request tries again,
 * so an import run meanwhile shows up on the next page load. Nothing here creates it.
 */
export class ViewerData {
  readonly sink: SinkName;
  readonly recall: Recall;
  private readonly store: FollowedStore<ViewerStore>;

  constructor(readonly settings: Settings) {
    this.sink = defaultSink(settings);
    this.recall = openRecall(settings, this.sink);
    this.store = new FollowedStore(settings.stateDir, (db) => new ViewerStore(db), () => this.openReadonly());
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

  /**
   * The embedded store, or undefined when there is none (yet, or any more). Checked at each request:
   * a store removed (`uninstall --purge`) or replaced (deleted and imported again) since the last one
   * is let go of, so the pages never show what is no longer stored.
   */
  local(): ViewerStore | undefined {
    return this.store.get();
  }

  /**
   * Read-only, so a page never takes the write lock an import holds, nor creates a store. Only a
   * store an older everme wrote (lacking message_days, migration 10) is opened read-write once to
   * bring it up to date, as any import, sync or hook would; after that the viewer only reads.
   */
  private openReadonly(): Database.Database {
    try {
      return openReadonlyDatabase(this.settings.stateDir);
    } catch (err) {
      if (!(err instanceof EvermeError) || err.code !== 'database_outdated') throw err;
    }
    openDatabase(this.settings.stateDir, { mustExist: true }).close();
    return openReadonlyDatabase(this.settings.stateDir);
  }

  /** Whether memories also go to the hosted gateway (a credential is configured). */
  get gateway(): boolean {
    return this.sink === 'everme';
  }

  close(): void {
    this.recall.close();
    this.store.close();
  }
}
