import { endsTurn } from '../core/agent-message.js';
import { utf8Owned } from '../core/utf8.js';
import type { PlannedRequest } from './task-batcher.js';

/**
 * A planned request as the gateway sink sends it: its messages' JSON, UTF-8 encoded by the plan
 * phase (on a plan worker), and what the sink needs to know of them besides. Posted to the main
 * thread as objects, every message was copied to it, stringified there and encoded to UTF-8 again
 * for the socket, on the thread that also keeps the marks and hands the store's rows on. Moved as
 * bytes, the 1x import to the loopback gateway and the store took 0.93x the time (median of 12
 * pairs of whole processes run in turn; 0.88x in another 8), to the gateway alone 0.99x (12 pairs):
 * the stringifying moved to the workers, and the copies between threads went away.
 */
export interface EncodedRequest {
  /** Keys of its messages, in order: the marks its acknowledgement moves. */
  keys: string[];
  /** As the planned request's (see PlannedRequest): what a sync holds back is bounded by it. */
  bytes: number;
  messageCount: number;
  /** Whether its last message ends a turn (see `endsTurn`). */
  endsTurn: boolean;
  /** `JSON.stringify(messages)` as UTF-8, in an ArrayBuffer of its own: moved between threads, never copied. */
  messagesJson: Uint8Array;
}

export function encodeRequest(request: PlannedRequest): EncodedRequest {
  return {
    keys: request.keys,
    bytes: request.bytes,
    messageCount: request.messages.length,
    endsTurn: endsTurn(request.messages.at(-1)),
    messagesJson: utf8Owned(JSON.stringify(request.messages)),
  };
}

/** A request with no messages: the flush a conversation may still be owed (see GatewaySink). */
export function emptyRequest(): EncodedRequest {
  return { keys: [], bytes: 0, messageCount: 0, endsTurn: false, messagesJson: utf8Owned('[]') };
}

/** The buffers a `postMessage` of these requests moves instead of copying. */
export function requestsTransferList(requests: readonly EncodedRequest[]): ArrayBuffer[] {
  return requests.map((request) => request.messagesJson.buffer as ArrayBuffer);
}
