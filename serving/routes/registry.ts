/**
 * THE route registry: every route of the service, declared once, composed from one module per domain. Routing,
 * request validation, free/paid, pricing, OpenAPI, the discovery documents and the MCP catalog derive from this list;
 * there is no second list anywhere.
 *
 * Spec (Versioning 6): "Free and paid classification is declared once in a route registry and enforced
 * identically on every route."
 */
import { ARENA_ROUTES } from './arena.ts'
import { AUTH_ROUTES } from './auth.ts'
import { ADMIN_ROUTES } from './admin.ts'
import { BILLING_ROUTES } from './billing.ts'
import { DECISION_ROUTES } from './decisions.ts'
import { DELIVERY_ROUTES } from './delivery.ts'
import { DISCOVERY_ROUTES } from './discovery.ts'
import { DUEL_ROUTES } from './duel.ts'
import { MARKET_ROUTES } from './market.ts'
import { OPS_ROUTES } from './ops.ts'
import { platformRoutes } from './platform.ts'
import { RECORD_ROUTES } from './record.ts'
import { RELEASE_ROUTES } from './releases.ts'
import { RISK_ROUTES } from './risk.ts'
import { STREAM_ROUTES } from './streams.ts'
import { TRACK_RECORD_ROUTES } from './trackRecord.ts'
import type { RouteDef } from './types.ts'
import { WALLET_ROUTES } from './wallet.ts'

export const ROUTES: readonly RouteDef[] = Object.freeze([
  ...platformRoutes(() => ROUTES),
  ...DISCOVERY_ROUTES,
  ...AUTH_ROUTES,
  ...DECISION_ROUTES,
  ...STREAM_ROUTES,
  ...RECORD_ROUTES,
  ...RELEASE_ROUTES,
  ...TRACK_RECORD_ROUTES,
  ...MARKET_ROUTES,
  ...WALLET_ROUTES,
  ...RISK_ROUTES,
  ...DUEL_ROUTES,
  ...ARENA_ROUTES,
  ...DELIVERY_ROUTES,
  ...BILLING_ROUTES,
  ...OPS_ROUTES,
  ...ADMIN_ROUTES,
])
