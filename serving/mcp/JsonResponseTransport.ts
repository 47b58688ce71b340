/**
 * The MCP SDK Transport behind the stateless endpoint: one long-lived SDK server answers every POST. Each POST carries
 * one message; a request is handed to the server under an id of this transport's own (clients number their requests
 * independently, so two clients' id 1 must not meet), and the server's response to it comes back under the client's id
 * as that POST's HTTP answer (application/json, never an SSE stream: the tools send no progress notifications, and the
 * streamable-HTTP spec lets a server always answer JSON).
 *
 * One server instead of one per POST: constructing the SDK server builds a JSON-schema validator, which cost more than
 * the whole tool call (bench/mcp.ts). Nothing per client lives in it: the endpoint issues no session, and the tools
 * never call back to the client.
 */
import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js'
import type { JSONRPCMessage, MessageExtraInfo, RequestId } from '@modelcontextprotocol/sdk/types.js'

/** What a handler may need of the HTTP request its JSON-RPC request came in. */
export interface RequestContext {
  headers: Record<string, string>
  ip: string
  /** The REST body a successful tool result was made from, for the endpoint to write without serializing it again. */
  answerBody: string | null
}

interface Pending {
  clientId: RequestId
  context: RequestContext
  answer: (message: JSONRPCMessage) => void
}

export class JsonResponseTransport implements Transport {
  onclose?: () => void
  onerror?: (error: Error) => void
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void
  private readonly pending = new Map<RequestId, Pending>()
  private nextId = 0

  async start(): Promise<void> {}

  /** The server's answer: the response to a request a POST is waiting for; anything else has no stream to go to. */
  async send(message: JSONRPCMessage, _options?: TransportSendOptions): Promise<void> {
    if (!('id' in message) || message.id === undefined || 'method' in message) return
    const waiting = this.pending.get(message.id)
    if (!waiting) return
    this.pending.delete(message.id)
    waiting.answer({ ...message, id: waiting.clientId } as JSONRPCMessage)
  }

  /** Hands a request to the SDK server and resolves with its response, under the client's id. */
  request(message: JSONRPCMessage & { id: RequestId }, context: RequestContext): Promise<JSONRPCMessage> {
    const id = ++this.nextId
    const answered = new Promise<JSONRPCMessage>((answer) => this.pending.set(id, { clientId: message.id, context, answer }))
    this.deliver({ ...message, id } as JSONRPCMessage, context)
    return answered
  }

  /** The HTTP request a request being handled came in (by the id the server sees). */
  contextOf(id: RequestId): RequestContext | undefined {
    return this.pending.get(id)?.context
  }

  /** A notification: nothing is answered. */
  deliver(message: JSONRPCMessage, context: RequestContext): void {
    if (!this.onmessage) throw new Error('transport not connected')
    this.onmessage(message, { requestInfo: { headers: context.headers } })
  }

  async close(): Promise<void> {
    this.pending.clear()
    this.onclose?.()
  }
}
