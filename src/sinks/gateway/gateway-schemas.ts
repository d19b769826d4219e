import * as z from 'zod';

/** Every gateway response, success or not. `status` 0 is the only success, whatever the HTTP code. */
export const envelopeSchema = z.object({
  status: z.number().int(),
  requestId: z.string().optional(),
  error: z.string().optional(),
  message: z.string().optional(),
  result: z.unknown().optional(),
});
export type GatewayEnvelope = z.infer<typeof envelopeSchema>;

/**
 * An envelope with status 0 is the server's acknowledgement that the messages were taken. The result
 * fields are informative only: rejecting the acknowledgement over a missing field would make the
 * next run resend messages the server already has, so they are all optional here.
 */
export const agentMemoryResultSchema = z.object({
  sessionId: z.string().optional(),
  status: z.string().optional(),
  messageCount: z.number().int().nonnegative().optional(),
  flushed: z.boolean().optional(),
});
export type AgentMemoryResult = z.infer<typeof agentMemoryResultSchema>;

export const searchItemSchema = z.looseObject({
  content: z.string(),
  conversationId: z.string().optional(),
  role: z.string().optional(),
  timestamp: z.number().optional(),
  score: z.number().optional(),
});
export type GatewaySearchItem = z.infer<typeof searchItemSchema>;

export const searchResultSchema = z.object({
  items: z.array(searchItemSchema),
  total: z.number().int().nonnegative().optional(),
  queryTimeMs: z.number().nonnegative().optional(),
});
export type GatewaySearchResult = z.infer<typeof searchResultSchema>;

export const contextResultSchema = z.object({
  profile: z
    .object({
      explicit_info: z.array(z.unknown()).default([]),
      implicit_traits: z.array(z.unknown()).default([]),
    })
    .optional(),
  context: z.string().optional(),
});
export type GatewayContextResult = z.infer<typeof contextResultSchema>;
