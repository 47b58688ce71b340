/** Shapes of the route registry: one declaration per route drives routing, validation, payment, documents and MCP. */
import type { TSchema } from '../../common/schema.ts'
import type { EventStream, StreamReader } from '../../common/EventStream.ts'
import type { ErrorCode } from '../../common/errors.ts'
import type { MetaOverrides } from '../envelope.ts'
import type { PaidCall } from '../../pipeline/journal/PaidCall.ts'
import type { UnitOfWork } from '../../pipeline/journal/UnitOfWork.ts'
import type { Price, PricingKey } from '../../product/billing/pricing.ts'
import type { ServicePart, Services } from '../Services.ts'
import type { StaticDocuments } from '../docs/StaticDocuments.ts'

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE'

/** A JSON Schema: a TypeBox schema, or a plain JSON Schema object for documents. */
export type JsonSchema = TSchema | Record<string, unknown>

/**
 * Free or paid. A paid key may name a path parameter in braces ('billing.pack.{pack_id}'); the parameter's enum
 * lists every concrete key.
 */
/**
 * free: no payment; paid: priced by a registry key and gated by the dispatcher; fee: paid, but the amount depends on
 * the request, so the handler computes it and answers its own 402 challenge (the dispatcher lets it through as it does
 * a free route, and every document lists it as paid).
 */
export type PayDecl = { kind: 'free' } | { kind: 'paid'; pricingKey: PricingKey | `billing.${'pack' | 'plan'}.{${string}}` } | { kind: 'fee'; note: string }

export type ResponseDecl =
  /** {data, meta} with data matching schema. */
  | { kind: 'envelope'; schema: JsonSchema; status?: number }
  /** A bare JSON document (OpenAPI, discovery). */
  | { kind: 'json'; schema: JsonSchema; contentType?: string }
  | { kind: 'text'; contentType: string }
  | { kind: 'redirect' }
  /**
   * A live stream (issue 33): Server-Sent Events on a plain GET, a WebSocket on an upgrade of the same path; each event
   * named here with its data schema carries the cursor after it (SSE id, WebSocket `id`).
   */
  | { kind: 'stream'; events: Record<string, JsonSchema> }

/**
 * The route as an MCP tool (spec, MCP tool server): the same dispatcher path as REST (one validation, one price, one
 * payment gate, one rate limit). The input schema is the union of the route's params, query and body schemas; each
 * tool argument goes to the request part that declares it.
 */
export interface McpTool {
  /** The tool name (svc_<name>). */
  name: string
  /** Written for a model choosing a tool: what it answers, when to call it, what it costs. */
  description: string
}

export interface HandlerContext {
  request_id: string
  now: number
  method: string
  path: string
  params: Record<string, unknown>
  query: Record<string, unknown>
  body: Record<string, unknown>
  headers: Readonly<Record<string, string>>
  ip: string
  services: Services
  documents: StaticDocuments
  /** Set on paid routes once the gate authorized the call. */
  payment: PaidCall | null
  /**
   * Set on paid routes with `payment`: the call's unit of work. What the answer writes is added here (never written
   * directly) and appended with the payment's own records as one atomic unit once the payment is captured.
   */
  unit: UnitOfWork | null
  price: Price | null
  /** The id route.paymentRef gave this call's payment (the handler names what it bought with it). */
  paymentRef?: string
  /** Returns a wired service part, or throws 503 PROVIDER_DOWN naming the missing part. */
  need<K extends ServicePart>(part: K): NonNullable<Services[K]>
}

export type HandlerResult =
  | {
      data: unknown
      meta?: MetaOverrides
      status?: number
      headers?: Record<string, string>
      /** A refusal decision (probability 0, confidence 0): never consumes a free-allowance question. */
      refusal?: boolean
      /** false: a re-served recorded answer; the payment is released, not settled (a repeat is not charged). */
      charge?: false
    }
  | { raw: { body: string | Uint8Array; contentType: string; status?: number; headers?: Record<string, string> } }
  | { redirect: string; status?: 301 | 302 }
  /** A stream route accepted: the stream and the reader positioned after the client's cursor (or at now). */
  | { stream: { source: EventStream; reader: StreamReader } }

/**
 * Where a payer-scoped route names its payer (spec, Authentication 1): a header, and optionally the query or body
 * field payer beside it (two that differ are a 400 PAYER_MISMATCH). The dispatcher proves the caller controls that
 * payer before the handler runs (issue 29); the credits header of every paid route is proven the same way.
 */
export interface PayerSource {
  header: 'payer' | 'x-svc-payer'
  field?: 'query' | 'body'
}

export interface RouteDef {
  id: string
  method: HttpMethod
  /** Template with {param} segments. */
  path: string
  summary: string
  description?: string
  tags: string[]
  pay: PayDecl
  /** Operator routes are left out of discovery documents and the MCP catalog. */
  operator?: boolean
  /**
   * The route exists only on a deployment where this service part is wired: the server leaves it out of the router
   * (and so of every document) otherwise, and its path answers 404 ROUTE_NOT_FOUND like any unknown path. Unlike
   * `needs` (503 SERVICE_UNWIRED), for routes whose very existence is configuration (spec: the funnel route "does not
   * exist when no admin key is configured").
   */
  onlyWhenWired?: ServicePart
  /** The route reads or changes what a payer owns: where the payer is named; the caller must prove control of it. */
  payer?: PayerSource
  /**
   * A route served by the payer's owner with several instances (issue 32) that is not payer-scoped: where it names the
   * payer. 'body': an operator route moving a payer's credits (the body's payer; the operator token authorizes it), so
   * its idempotency by ref holds across the cluster. 'sign-in': the address a signed sign-in claims, so the session
   * opens at the instance that serves the payer and the caller's next request finds it there (read-your-writes).
   */
  creditsOf?: 'body' | 'sign-in'
  /** Health probes and metrics: never rate limited (a probe refused with 429 would restart a healthy service). */
  unlimited?: true
  /** The route as an MCP tool; absent: REST only. */
  mcp?: McpTool
  /** The catalog question a paid call asks, when known before the handler (free-allowance eligibility). */
  questionOf?: (ctx: HandlerContext) => string | null
  /** Paid routes: the id the payment carries when the rail lets the route name it (PaymentRequest.payment_ref). */
  paymentRef?: (ctx: HandlerContext) => string
  /**
   * Paid routes: the refusals that cost nothing (an unknown question, a clock still open, an unknown decision), thrown
   * before the payment challenge, so a caller is never asked to pay for a typed refusal. A result is an answer that
   * costs nothing and is known before the payment (a replay): it is written as is, with no payment asked or taken.
   */
  precheck?: (ctx: HandlerContext) => void | HandlerResult | Promise<void | HandlerResult>
  /** Service parts the handler needs; checked before payment so an unwired part never charges. */
  needs?: ServicePart[]
  request: { params?: JsonSchema; query?: JsonSchema; body?: JsonSchema; headers?: JsonSchema }
  response: ResponseDecl
  /** Codes this route's handler may return; the dispatcher's common codes are added by routeErrors(). */
  errors: ErrorCode[]
  handler: (ctx: HandlerContext) => HandlerResult | Promise<HandlerResult>
}
