/**
 * The OpenAPI 3.1 document, derived from the route registry and the error registry (no second list).
 *
 * Spec (Discovery): "/openapi.json | OpenAPI 3.1 with free/paid split and price annotations on paid operations".
 */
import { answerKeysOf, type AnswerKeys } from '../../record/answerKeys/answerSignature.ts'
import { CHALLENGE_PATH, SESSION_PATH, SIGN_IN_HOWTO } from '../auth/signInHowTo.ts'
import { ERRORS, type ErrorCode } from '../../common/errors.ts'
import { Address } from '../../common/schema.ts'
import { ERROR_ENVELOPE_SCHEMA, META_SCHEMA, envelopeSchema } from '../envelope.ts'
import { ENDPOINT_PRICES, priceOf, CREDIT_TO_USD } from '../../product/billing/pricing.ts'
import { BASE_NETWORK, MAX_TIMEOUT_SECONDS, USDC_BASE, USDC_BASE_EXTRA } from '../payments/x402.ts'
import { concretePaidPaths, isPublic, routeErrors } from '../routes/derive.ts'
import type { RouteDef } from '../routes/types.ts'

const META_REF = '#/components/schemas/Meta'
const ERROR_REF = '#/components/schemas/ErrorEnvelope'

interface ObjectSchema {
  properties?: Record<string, Record<string, unknown>>
  required?: string[]
}

function parameters(route: RouteDef): unknown[] {
  const out: unknown[] = []
  const add = (where: 'path' | 'query' | 'header', schema: ObjectSchema | undefined) => {
    if (!schema?.properties) return
    for (const [name, s] of Object.entries(schema.properties)) {
      const { description, ...rest } = s as { description?: string }
      out.push({
        name,
        in: where,
        required: where === 'path' || (schema.required ?? []).includes(name),
        ...(description ? { description } : {}),
        schema: rest,
      })
    }
  }
  add('path', route.request.params as ObjectSchema | undefined)
  add('query', route.request.query as ObjectSchema | undefined)
  add('header', route.request.headers as ObjectSchema | undefined)
  if (route.pay.kind === 'paid') {
    out.push({ name: 'PAYMENT-SIGNATURE', in: 'header', required: false, description: 'base64 x402 v2 PaymentPayload (per-call payment)', schema: { type: 'string' } })
    if (!(route.request.headers as ObjectSchema | undefined)?.properties?.['x-svc-payer']) {
      out.push({ name: 'x-svc-payer', in: 'header', required: false, description: 'Base address paying with prepaid credits instead of PAYMENT-SIGNATURE', schema: Address })
    }
  }
  return out
}

function successResponse(route: RouteDef): Record<string, unknown> {
  const r = route.response
  switch (r.kind) {
    case 'envelope':
      return {
        [String(r.status ?? 200)]: {
          description: 'Success envelope {data, meta}',
          content: { 'application/json': { schema: envelopeSchema(r.schema, META_REF) } },
        },
      }
    case 'json':
      return { '200': { description: 'JSON document', content: { [r.contentType ?? 'application/json']: { schema: r.schema } } } }
    case 'text':
      return { '200': { description: 'Text document', content: { [r.contentType]: { schema: { type: 'string' } } } } }
    case 'redirect':
      return { '302': { description: 'Redirect', headers: { Location: { schema: { type: 'string' } } } } }
    case 'stream':
      return {
        '200': {
          description: `Live stream: Server-Sent Events on this GET, or a WebSocket on an upgrade of the same path (messages {id, event, data}). Events: ${Object.keys(r.events).join(', ')}; each id is the cursor to resume after it (Last-Event-ID or ?cursor=).`,
          content: { 'text/event-stream': { schema: { type: 'string' }, 'x-events': r.events } },
        },
      }
  }
}

function errorResponses(route: RouteDef): Record<string, unknown> {
  const byStatus = new Map<number, ErrorCode[]>()
  for (const code of routeErrors(route)) {
    const s = ERRORS[code].status
    byStatus.set(s, [...(byStatus.get(s) ?? []), code])
  }
  const out: Record<string, unknown> = {}
  for (const [status, codes] of byStatus) {
    const headers: Record<string, unknown> = {}
    if (status === 402) headers['PAYMENT-REQUIRED'] = { description: 'base64 x402 v2 PaymentRequired', schema: { type: 'string' } }
    if (status === 429) headers['Retry-After'] = { description: 'seconds', schema: { type: 'integer' } }
    out[String(status)] = {
      description: `Error envelope; code one of ${codes.join(', ')}`,
      ...(Object.keys(headers).length ? { headers } : {}),
      content: { 'application/json': { schema: { $ref: ERROR_REF } } },
    }
  }
  return out
}

function pricingExtensions(route: RouteDef, payTo: string | null): Record<string, unknown> {
  if (route.pay.kind === 'free') return { 'x-pricing': { kind: 'free' } }
  if (route.pay.kind === 'fee') return { 'x-pricing': { kind: 'fee', note: route.pay.note } }
  const concrete = concretePaidPaths(route).map(({ path, key }) => {
    const p = priceOf(key, 0)
    return { path, pricing_key: key, credits: p.credits, usd: p.usd, amount: p.amount_atomic }
  })
  const first = concrete[0]!
  return {
    'x-pricing': {
      kind: 'paid',
      pricing_key: route.pay.pricingKey,
      credits: first.credits,
      usd: first.usd,
      rung: 0,
      ...(concrete.length > 1 ? { variants: concrete } : {}),
      note: 'rung-0 list price; the current price is in GET /v1/pricing (x 1.25 per ladder rung)',
    },
    'x-payment': {
      protocol: 'x402',
      x402Version: 2,
      scheme: 'exact',
      network: BASE_NETWORK,
      asset: USDC_BASE,
      amount: first.amount,
      payTo,
      maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
      extra: USDC_BASE_EXTRA,
      credits_header: 'x-svc-payer',
    },
  }
}

export function buildOpenApi(routes: readonly RouteDef[], opts: { serverUrl: string; version: string; payTo: string | null; answerKeys?: AnswerKeys }): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {}
  for (const route of routes) {
    if (!isPublic(route)) continue
    const op: Record<string, unknown> = {
      operationId: route.id,
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      tags: route.tags,
      parameters: parameters(route),
      ...(route.request.body
        ? { requestBody: { required: true, content: { 'application/json': { schema: route.request.body } } } }
        : {}),
      responses: { ...successResponse(route), ...errorResponses(route) },
      // Issue 29: the named payer is proven by a session or a one-use sign-in; paid routes also take x402 (no proof needed).
      ...(route.payer || route.pay.kind === 'paid' ? { security: [{ payerSession: [] }, { signInWithX: [] }, ...(route.payer ? [] : [{}])] } : {}),
      ...pricingExtensions(route, opts.payTo),
    }
    paths[route.path] ??= {}
    paths[route.path]![route.method.toLowerCase()] = op
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Decision Intelligence Service',
      version: opts.version,
      description:
        'Calibrated probabilistic answers about crypto perpetual markets, recorded on an append-only ledger and resolved at their horizon. ' +
        `Paid routes accept x402 v2 (exact, USDC on Base) or prepaid credits (1 credit = ${CREDIT_TO_USD} USD at rung 0). ` +
        'Credits and every payer-scoped route need proof of control of the payer address (securitySchemes payerSession or signInWithX).',
    },
    servers: [{ url: opts.serverUrl }],
    paths,
    components: {
      schemas: { Meta: META_SCHEMA, ErrorEnvelope: ERROR_ENVELOPE_SCHEMA },
      securitySchemes: {
        payerSession: { type: 'http', scheme: 'bearer', description: `A session for the payer address (x-svc-payer names it): POST ${SESSION_PATH} with a signed SIGN-IN-WITH-X header returns the token. ${SIGN_IN_HOWTO}` },
        signInWithX: { type: 'apiKey', in: 'header', name: 'SIGN-IN-WITH-X', description: `base64 of a signed x402 sign-in-with-x payload (EIP-4361 on eip155:8453, EIP-191); one use. Challenge: GET ${CHALLENGE_PATH}, any 402 PAYMENT-REQUIRED extensions["sign-in-with-x"], or a 401 PAYER_UNPROVEN detail.` },
      },
    },
    // Issue 29: the keys that sign served decision records (meta.signatures), each with its window.
    'x-answer-keys': opts.answerKeys ?? answerKeysOf(undefined),
    'x-pricing-keys': Object.fromEntries(Object.entries(ENDPOINT_PRICES).map(([k, v]) => [k, { credits: v.credits, usd: priceOf(k as keyof typeof ENDPOINT_PRICES).usd }])),
  }
}
