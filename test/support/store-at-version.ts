import Database from 'better-sqlite3';
import { databasePath, MIGRATIONS } from '../../src/store/database.js';

/** A store as a release that knew only the first `version` migrations left it, opened raw. */
export function storeAtVersion(stateDir: string, version: number): Database.Database {
  const raw = new Database(databasePath(stateDir));
  for (const step of MIGRATIONS.slice(0, version)) if (typeof step === 'string') raw.exec(step);
  else step(raw);
  raw.pragma(`user_version = ${version}`);
  return raw;
}
