import type { EvermeError } from '../core/errors.js';
import type { SinkName } from '../config/settings.js';
import type { Recall, RecallContext, RecallSearch } from './recall.js';

/**
 * Recall when everme cannot tell where the memories are (its settings failed: the data dir is
 * missing, say): every call fails with why. A long-lived server (the MCP server a host starts)
 * then answers that to every tool call instead of exiting before its handshake, which a host shows
 * only as "failed to start" and the agent never sees.
 */
export class UnavailableRecall implements Recall {
  readonly localStore = undefined;

  constructor(
    readonly sink: SinkName,
    readonly reason: EvermeError,
  ) {}

  search(): Promise<RecallSearch> {
    return Promise.reject(this.reason);
  }

  context(): Promise<RecallContext> {
    return Promise.reject(this.reason);
  }

  close(): void {}
}
