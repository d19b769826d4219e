import { PROJECT_FILTER, projectParams, type ProjectParams } from './conversation-list.js';

/**
 * Which messages a search ranks: a project (its workspace and everything below), a role, a time
 * range. Applied inside the ranking query, so a filtered search ranks every match that passes, as
 * the unfiltered one ranks every match: a filter never hides a match that ranked low overall.
 */
export interface SearchScope extends ProjectParams {
  role: string | null;
  /** Epoch ms, inclusive. */
  since: number | null;
  /** Epoch ms, exclusive. */
  until: number | null;
}

export interface ScopeOptions {
  project?: string;
  role?: string;
  since?: number;
  until?: number;
}

export function searchScope(opts: ScopeOptions = {}): SearchScope {
  return { ...projectParams(opts.project), role: opts.role ?? null, since: opts.since ?? null, until: opts.until ?? null };
}

/** Whether the scope leaves any message out (the ranking then joins the messages to filter them). */
export function isScoped(s: SearchScope): boolean {
  return s.project !== null || s.role !== null || s.since !== null || s.until !== null;
}

/** A condition on `messages m` joined to `conversations c`, for the named parameters of `SearchScope`. */
export const SCOPE_FILTER = `${PROJECT_FILTER}
  AND (@role IS NULL OR m.role = @role)
  AND (@since IS NULL OR m.timestamp >= @since)
  AND (@until IS NULL OR m.timestamp < @until)`;
