import { openDatabase } from '../../src/store/database.js';

/**
 * One `count(*)` a running process's store answers (`sql` selects it), read while the run goes on;
 * 0 while the database is still being created.
 */
export function storeCount(stateDir: string, sql: string): number {
  try {
    const db = openDatabase(stateDir, { readonly: true });
    try {
      return db.prepare<[], number>(sql).pluck().get() ?? 0;
    } finally {
      db.close();
    }
  } catch {
    return 0;
  }
}
