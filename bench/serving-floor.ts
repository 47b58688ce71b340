/**
 * The floor under a decision read on this machine: a uWebSockets.js server doing only the work that no implementation
 * of GET /v1/decisions/{id} can skip beyond the hello-world. It reads the peer address (the per-IP token bucket keys
 * on it), the URL and the query, and sends the route's own answer, the same body and header block, with a fresh
 * request id and timestamp stamped in by the service's own byte helpers.
 *
 * Routing, the bucket, validation, the ledger lookup and choosing the envelope cost nothing here, so the route's
 * ratio to the bare hello-world can approach the floor's ratio but not pass it. The bench prints the floor beside
 * the route so a reader can tell the service's own cost apart from what loopback and the binding charge for this
 * answer.
 */
import uWS from 'uWebSockets.js'
import { isoTimestamp } from '../serving/envelope.ts'
import { slabConcat } from '../serving/http/byteSlab.ts'
import { RequestIds } from '../serving/http/RequestIds.ts'
import { headerBlockBytes, JSON_TYPE } from '../serving/http/ResponseWriter.ts'
import { remoteAddressText } from '../serving/http/UwsAdapter.ts'
import { listenBenchApp, type HelloServer } from './serving-hello.ts'

/** One answer of the route, as the client received it. */
export interface RecordedAnswer {
  body: string
  headers: Headers
}

export type FloorServer = HelloServer

const STAMP_AT = ',"meta":{"request_id":'
const REST_AT = ',"state":'

/** Splits a success envelope around the request id and timestamp that change per response. Exported for its test. */
export function splitEnvelope(body: string): { head: Buffer; tail: Buffer } {
  const stamp = body.indexOf(STAMP_AT)
  const rest = body.indexOf(REST_AT, stamp)
  if (stamp < 0 || rest < 0) throw new Error(`not a success envelope with meta.request_id and meta.state: ${body.slice(0, 120)}`)
  return { head: Buffer.from(body.slice(0, stamp), 'utf8'), tail: Buffer.from(body.slice(rest), 'utf8') }
}

export function startFloorServer(answer: RecordedAnswer, port = 0, host = '127.0.0.1'): Promise<FloorServer> {
  const { head, tail } = splitEnvelope(answer.body)
  const header = (name: string) => {
    const v = answer.headers.get(name)
    if (v === null) throw new Error(`the recorded answer has no ${name} header`)
    return v
  }
  const limit = header('ratelimit-limit')
  const remaining = header('ratelimit-remaining')
  const reset = header('ratelimit-reset')
  const name = Buffer.from('x-request-id', 'latin1')
  const ids = new RequestIds()
  const app = uWS.App().get('/*', (res, req) => {
    // Read as the service reads them (native calls: none of them can be optimized away).
    remoteAddressText(res.getRemoteAddress())
    req.getUrl()
    req.getQuery()
    const id = ids.next()
    const headers = { 'x-request-id': id, 'ratelimit-limit': limit, 'ratelimit-remaining': remaining, 'ratelimit-reset': reset, 'content-type': JSON_TYPE }
    const body = slabConcat(head, STAMP_AT + '"' + id + '","timestamp":"' + isoTimestamp(Date.now()) + '"', tail)
    res.writeHeader(name, headerBlockBytes(headers))
    res.end(body)
  })
  return listenBenchApp(app, host, port)
}
