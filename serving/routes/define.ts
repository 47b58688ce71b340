/** Small builders every per-domain route module shares (one spelling of free, paid, an envelope, a typed 404). */
import { ServiceError } from '../../common/ServiceError.ts'
import { Address, CanonicalAsset, Chain, Type, Uuid } from '../../common/schema.ts'
import type { EndpointPricingKey } from '../../product/billing/pricing.ts'
import type { HandlerContext, JsonSchema, PayDecl, PayerSource, ResponseDecl } from './types.ts'

export const FREE = { kind: 'free' } as const satisfies PayDecl
export const fee = (note: string) => ({ kind: 'fee', note }) as const satisfies PayDecl
export const paid = (pricingKey: EndpointPricingKey | 'billing.pack.{pack_id}' | 'billing.plan.{plan_id}') => ({ kind: 'paid', pricingKey }) as const satisfies PayDecl
export const env = (schema: JsonSchema, status?: number): ResponseDecl => ({ kind: 'envelope', schema, ...(status ? { status } : {}) })

/** A response the service documents only as "an object" (shapes the spec leaves open). */
export const ANY_OBJECT = { type: 'object' } as const

export const DECISION_ID_PARAMS = Type.Object({ decision_id: Uuid }, { additionalProperties: false })
export const ASSET_PARAMS = Type.Object({ asset: CanonicalAsset }, { additionalProperties: false })
export const WALLET_PARAMS = Type.Object({ chain: Chain, address: Address }, { additionalProperties: false })
/** Spec, Authentication 1: "header x-svc-payer on duel, delivery and rate-lock routes". */
export const PAYER_HEADER = Type.Object({ 'x-svc-payer': Address })

/** Payer-scoped routes (issue 29): the payer named in x-svc-payer, in payer (Arena), or in either beside a field. */
export const PAYER_IN_HEADER = { header: 'x-svc-payer' } as const satisfies PayerSource
export const PAYER_IN_ARENA = { header: 'payer', field: 'query' } as const satisfies PayerSource

/**
 * The query parameter of every paged list: a previous page's next_cursor (opaque, common/Cursor.ts). Its contents are
 * the list's to check (400 VALIDATION / INVALID_CURSOR); the schema only bounds it as Cursor.ts does.
 */
export const CURSOR_PARAM = Type.Optional(
  Type.String({ minLength: 1, maxLength: 1024, description: "A previous page's next_cursor: the page after it. Opaque; absent: the first page." }),
)

/** The cursor a paged list was given, or null for its first page. */
export function cursorOf(ctx: HandlerContext): string | null {
  return typeof ctx.query.cursor === 'string' ? ctx.query.cursor : null
}

/** The spec's typed 404 for an id or symbol that names nothing. */
export function notFound(code: 'DECISION_NOT_FOUND' | 'ASSET_NOT_FOUND', field: string, value: unknown): never {
  throw new ServiceError(code, { detail: { field, value } })
}

/**
 * The payer a caller-scoped free route is about (spec, Authentication 1: header x-svc-payer on duel routes, header
 * payer and query payer on Arena routes; a payer field in some bodies): the field in `part` or the header, one of them
 * required; two naming different addresses is a 400 PAYER_MISMATCH, never a guess.
 */
export function callerPayer(ctx: HandlerContext, header: 'payer' | 'x-svc-payer', part: 'query' | 'body' | null): string {
  const fromHeader = ctx.headers[header]
  const given = (part === null ? undefined : part === 'query' ? ctx.query.payer : ctx.body.payer) as string | undefined
  if (given !== undefined && fromHeader !== undefined && given.toLowerCase() !== fromHeader.toLowerCase()) {
    throw new ServiceError('VALIDATION', {
      message: `The ${part} payer and the ${header} header name different payers.`,
      detail: { reason: 'PAYER_MISMATCH', field: `/${part}/payer` },
    })
  }
  const payer = given ?? fromHeader
  if (payer === undefined) {
    throw new ServiceError('VALIDATION', {
      message: part === null ? `Name the payer in the ${header} header (a 0x-prefixed 20-byte hex address).` : `Name the payer: the ${part} field payer or the ${header} header (a 0x-prefixed 20-byte hex address).`,
      detail: { reason: 'REQUEST_VALIDATION_FAILED', field: part === null ? `/headers/${header}` : `/${part}/payer` },
    })
  }
  return payer
}
