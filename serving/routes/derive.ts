/** Facts derived from a route declaration (used by the dispatcher, documents and tests alike). */
import { ERRORS, type ErrorCode } from '../../common/errors.ts'
import { isPricingKey, type PricingKey } from '../../product/billing/pricing.ts'
import type { RouteDef } from './types.ts'

/** Every code a route can answer with: its own plus those the dispatcher adds. Sorted by status then code. */
export function routeErrors(route: RouteDef): ErrorCode[] {
  const codes = new Set<ErrorCode>(route.errors)
  if (route.unlimited !== true) codes.add('RATE_LIMITED')
  codes.add('INTERNAL')
  const req = route.request
  if (req.params || req.query || req.body || req.headers) codes.add('VALIDATION')
  if (req.body) {
    codes.add('PAYLOAD_TOO_LARGE')
    codes.add('UNSUPPORTED_MEDIA_TYPE')
  }
  if (route.payer) codes.add('PAYER_UNPROVEN')
  if (route.pay.kind === 'paid') {
    codes.add('PAYMENT_REQUIRED')
    codes.add('PAYMENT_INVALID')
    codes.add('PAYMENT_REPLAYED')
  }
  if (route.needs && route.needs.length > 0) codes.add('PROVIDER_DOWN')
  return [...codes].sort((a, b) => ERRORS[a].status - ERRORS[b].status || a.localeCompare(b))
}

const TEMPLATE = /\{([a-z_]+)\}/

/** The name of the path parameter a templated pricing key depends on, or null. */
export function pricingParam(route: RouteDef): string | null {
  if (route.pay.kind !== 'paid') return null
  return TEMPLATE.exec(route.pay.pricingKey)?.[1] ?? null
}

/** Resolves the pricing key of a paid route for concrete params. */
export function pricingKeyFor(route: RouteDef, params: Record<string, unknown>): PricingKey {
  if (route.pay.kind !== 'paid') throw new Error(`route ${route.id} is free`)
  const key = route.pay.pricingKey.replace(TEMPLATE, (_, name: string) => String(params[name]))
  if (!isPricingKey(key)) throw new Error(`route ${route.id}: unknown pricing key ${key}`)
  return key
}

/** Every concrete (path, pricing key) of a paid route: templated keys expand over the parameter's enum. */
export function concretePaidPaths(route: RouteDef): Array<{ path: string; key: PricingKey }> {
  const param = pricingParam(route)
  if (!param) return [{ path: route.path, key: pricingKeyFor(route, {}) }]
  const schema = route.request.params as { properties?: Record<string, { enum?: string[] }> } | undefined
  const values = schema?.properties?.[param]?.enum
  if (!values) throw new Error(`route ${route.id}: pricing parameter ${param} needs an enum`)
  return values.map((v) => ({ path: route.path.replace(`{${param}}`, v), key: pricingKeyFor(route, { [param]: v }) }))
}

/** Discoverable = everything but operator routes. */
export function isPublic(route: RouteDef): boolean {
  return route.operator !== true
}
