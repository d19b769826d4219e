/** EverMe's agent-memory message shape: what the gateway receives and the embedded store keeps. */
export interface AgentToolCall {
  id: string;
  type: 'function';
  name: string;
  /** JSON-encoded arguments object. */
  arguments: string;
}

export interface AgentUserMessage {
  role: 'user';
  timestamp: number;
  content: string;
}

export interface AgentAssistantMessage {
  role: 'assistant';
  timestamp: number;
  content?: string;
  toolCalls?: AgentToolCall[];
  turnComplete: boolean;
}

export interface AgentToolMessage {
  role: 'tool';
  timestamp: number;
  toolCallId: string;
  content: string;
}

export type AgentMessage = AgentUserMessage | AgentAssistantMessage | AgentToolMessage;

/** A converted message with the stable key its high-water mark is recorded under. */
export interface KeyedMessage {
  key: string;
  message: AgentMessage;
}

/** Whether a conversation's last message ends a turn (an assistant message whose turn completed): what a sync's flush waits for. */
export function endsTurn(last: AgentMessage | undefined): boolean {
  return last?.role === 'assistant' && last.turnComplete;
}
