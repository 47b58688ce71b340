/**
 * The MCP SDK Transport for one HTTP POST in stateless mode: the message the POST carried goes to the SDK server, the
 * server's answer to that request id comes back as the HTTP response (application/json, never an SSE stream: the
 * tools here send no progress notifications, and the streamable-HTTP spec lets a server always answer JSON).
 */
import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js'
import type { JSONRPCMessage, MessageExtraInfo, RequestId } from '@modelcontextprotocol/sdk/types.js'

export class JsonResponseTransport implements Transport {
  onclose?: () => void
  onerror?: (error: Error) => void
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void
  private readonly waiting = new Map<RequestId, (message: JSONRPCMessage) => void>()

  async start(): Promise<void> {}

  /** The server's answer: the response to a request this POST is waiting for; anything else has no stream to go to. */
  async send(message: JSONRPCMessage, _options?: TransportSendOptions): Promise<void> {
    if (!('id' in message) || message.id === undefined || 'method' in message) return
    const wake = this.waiting.get(message.id)
    if (wake) {
      this.waiting.delete(message.id)
      wake(message)
    }
  }

  /** Hands a request to the SDK server and resolves with its response. */
  request(message: JSONRPCMessage & { id: RequestId }, extra: MessageExtraInfo): Promise<JSONRPCMessage> {
    const answered = new Promise<JSONRPCMessage>((resolve) => this.waiting.set(message.id, resolve))
    this.deliver(message, extra)
    return answered
  }

  /** A notification or response: nothing is answered. */
  deliver(message: JSONRPCMessage, extra: MessageExtraInfo): void {
    if (!this.onmessage) throw new Error('transport not connected')
    this.onmessage(message, extra)
  }

  async close(): Promise<void> {
    this.waiting.clear()
    this.onclose?.()
  }
}
