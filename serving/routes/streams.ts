/**
 * Live streams (issue 33): the feed, the open clocks, the new decisions and the payer's own notifications, each as
 * Server-Sent Events on a GET and as a WebSocket on an upgrade of the same path. Transport only: the events, their
 * order and their cursors come from the domains (engine/LedgerStreams.ts, product/arena/NotificationStreams.ts); the
 * connections, caps and backpressure from serving/streams/StreamFanout.ts.
 *
 * Resuming: the cursor after the last event seen goes in the Last-Event-ID header (what a browser's EventSource
 * sends on its own reconnect) or ?cursor= (both: the header wins, it is the newer). Without one the stream starts at
 * the next event.
 */
import type { EventStream } from '../../common/EventStream.ts'
import { DECISION_RECORD, FEED_CHIP, OPEN_CLOCK } from '../../engine/schemas.ts'
import { OUTCOMES } from '../../pipeline/records/outcomeRecord.ts'
import { Address, Instant, JsonObject, Open, QuestionId, StringEnum, Type, Uuid } from '../../common/schema.ts'
import { FREE, PAYER_IN_ARENA, callerPayer } from './define.ts'
import type { HandlerContext, HandlerResult, JsonSchema, RouteDef } from './types.ts'

/** Where every stream route lives (the WebSocket upgrade pattern is this prefix). */
export const STREAMS_PREFIX = '/v1/streams/'

const CURSOR_QUERY = { cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'resume after this cursor (an event id this stream sent)' })) }
const LAST_EVENT_ID = { 'last-event-id': Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'resume after this cursor (set by EventSource on reconnect)' })) }
const CURSOR_HEADERS = Open(LAST_EVENT_ID)

/** Accepts the stream after the client's cursor (a bad one is the usual 400 INVALID_CURSOR, before anything streams). */
function streamOf(ctx: HandlerContext, source: EventStream): HandlerResult {
  const header = ctx.headers['last-event-id']
  const query = typeof ctx.query.cursor === 'string' ? ctx.query.cursor : undefined
  const cursor = header ?? query ?? null
  return { stream: { source, reader: source.reader(cursor, header !== undefined ? 'last-event-id' : 'cursor') } }
}

const CLOCK_CLOSED = Type.Object(
  { decision_id: Uuid, question_id: QuestionId, asset: Type.String(), status: StringEnum(OUTCOMES), resolved_at: Instant },
  { additionalProperties: false },
)

const NOTIFICATION = Type.Object(
  { id: Type.Integer({ minimum: 1 }), kind: Type.String(), ref: Type.String(), payload: JsonObject, created_at: Instant, read_at: Type.Null() },
  { additionalProperties: false },
)

/** One of the ledger's public streams (engine/LedgerStreams.ts): free, anonymous, resumable by cursor. */
function ledgerStream(name: 'feed' | 'clocks' | 'decisions', summary: string, events: Record<string, JsonSchema>): RouteDef {
  return {
    id: `streams.${name}`,
    method: 'GET',
    path: `${STREAMS_PREFIX}${name}`,
    summary,
    tags: ['streams'],
    pay: FREE,
    needs: ['streams'],
    request: { query: Open(CURSOR_QUERY), headers: CURSOR_HEADERS },
    response: { kind: 'stream', events },
    errors: [],
    handler: (ctx) => streamOf(ctx, ctx.need('streams')[name]),
  }
}

export const STREAM_ROUTES: readonly RouteDef[] = [
  ledgerStream('feed', 'Live feed: each resolution as the chip /v1/feed lists (SSE, or WebSocket on upgrade)', { chip: FEED_CHIP }),
  ledgerStream('clocks', 'Live open clocks: a clock opened (as /v1/clocks/open lists it), a clock closed (SSE, or WebSocket on upgrade)', { opened: OPEN_CLOCK, closed: CLOCK_CLOSED }),
  ledgerStream('decisions', 'Live decisions: each new market decision record as GET /v1/decisions/{id} serves it (SSE, or WebSocket on upgrade)', { decision: DECISION_RECORD }),
  {
    id: 'streams.notifications',
    method: 'GET',
    path: `${STREAMS_PREFIX}notifications`,
    summary: "Live notifications of one payer (the Arena feed's entries as they arrive), proven as GET /v1/arena/notifications",
    tags: ['streams', 'arena'],
    pay: FREE,
    payer: PAYER_IN_ARENA,
    needs: ['arena'],
    request: {
      query: Open({ payer: Type.Optional(Address), ...CURSOR_QUERY }),
      headers: Open({ payer: Type.Optional(Address), ...LAST_EVENT_ID }),
    },
    response: { kind: 'stream', events: { notification: NOTIFICATION } },
    errors: [],
    handler: (ctx) => streamOf(ctx, ctx.need('arena').notificationStreams.stream(callerPayer(ctx, 'payer', 'query'))),
  },
]
