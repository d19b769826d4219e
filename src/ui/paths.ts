/**
 * Every address the viewer writes (links, forms, assets, the script's fetches, redirects) lives
 * under the launch's secret prefix `/<secret>`: a path reaches only the server it names, unlike a
 * cookie, which a browser sends to every port of 127.0.0.1 (so to any other local web server the
 * user visits). Built only here, so no page links outside the prefix.
 */
export interface ViewerPaths {
  /** `/<secret>`: what every path of this launch starts with. */
  readonly base: string;
  /** A route of the viewer (`'/search'`) with an optional query (`'q=x'`), under the prefix. */
  to(route: `/${string}`, query?: string): string;
  /** A workspace's own page; the unknown-workspace group has one too. */
  project(workspaceDir: string | undefined): string;
  /** A conversation, opened at a message when one is named. */
  conversation(conversationId: string, messageId?: number): string;
}

export function viewerPaths(secret: string): ViewerPaths {
  const base = `/${secret}`;
  const to = (route: `/${string}`, query?: string): string => `${base}${route}${query ? `?${query}` : ''}`;
  return {
    base,
    to,
    project: (workspaceDir) => (workspaceDir === undefined ? to('/project', 'unknown=1') : to('/project', `dir=${encodeURIComponent(workspaceDir)}`)),
    conversation: (conversationId, messageId) => {
      const page = to(`/conversation/${encodeURIComponent(conversationId)}`);
      return messageId === undefined ? page : `${page}?m=${messageId}#m${messageId}`;
    },
  };
}
