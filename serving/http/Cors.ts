/**
 * Cross-origin access for browser pages (issue 33 item 3): an allowlist of origins from the configuration
 * (SVC_CORS_ORIGINS; none by default, and then no CORS header is ever sent). Fetch standard, "CORS protocol":
 *  - a preflight (OPTIONS with Origin and Access-Control-Request-Method) from an allowed origin is answered 204 with
 *    Access-Control-Allow-Origin echoing the origin, Allow-Methods from the route registry's methods for the path,
 *    Allow-Headers, Max-Age; from any other origin it is refused (403 ORIGIN_FORBIDDEN, no CORS header);
 *  - an actual answer to an allowed origin carries Access-Control-Allow-Origin and Expose-Headers; to any other origin
 *    none, so the browser withholds it from the page;
 *  - every answer says Vary: Origin while an allowlist is configured (the same URL answers differently per Origin, and
 *    a shared cache must not hand one origin's answer to another).
 * No Access-Control-Allow-Credentials: the API authenticates with headers (Authorization, PAYMENT-SIGNATURE,
 * SIGN-IN-WITH-X), never cookies, so a page never needs to send credentials.
 * The header lists come from serving/http/apiHeaders.ts and the route registry's request schemas (no second list).
 */
import type { RouteDef } from '../routes/types.ts'
import { REQUEST_HEADER, RESPONSE_HEADER } from './apiHeaders.ts'

/** How long a browser may cache a preflight answer, in seconds (Chromium caps it at 7200). */
export const CORS_MAX_AGE_S = 7200

export class Cors {
  private readonly origins: ReadonlySet<string>
  /** Access-Control-Allow-Headers: the common request headers and every header a route's request schema declares. */
  readonly allowHeaders: string
  /** Access-Control-Expose-Headers: every response header of the API a client reads. */
  readonly exposeHeaders: string

  /** null when no origin is configured: the dispatcher then does no CORS work at all. */
  static of(origins: readonly string[], routes: readonly RouteDef[]): Cors | null {
    return origins.length === 0 ? null : new Cors(origins, routes)
  }

  private constructor(origins: readonly string[], routes: readonly RouteDef[]) {
    // A browser sends the serialized origin (lower-case scheme and host, no default port): the configured text is
    // brought to the same form, so 'https://App.example:443' matches what the browser sends.
    this.origins = new Set(origins.map((o) => new URL(o).origin))
    const requestHeaders = new Set<string>(Object.values(REQUEST_HEADER))
    for (const r of routes) {
      const declared = (r.request.headers as { properties?: Record<string, unknown> } | undefined)?.properties
      if (declared) for (const name of Object.keys(declared)) requestHeaders.add(name.toLowerCase())
    }
    this.allowHeaders = [...requestHeaders].sort().join(', ')
    this.exposeHeaders = Object.values(RESPONSE_HEADER).map((h) => h.toLowerCase()).join(', ')
  }

  allows(origin: string): boolean {
    return this.origins.has(origin)
  }

  /** The headers of an actual answer to `origin` (Vary for every origin, the rest only for an allowed one). */
  answerHeaders(origin: string | undefined, headers: Record<string, string>): void {
    headers.vary = 'Origin'
    if (origin === undefined || !this.origins.has(origin)) return
    headers['access-control-allow-origin'] = origin
    headers['access-control-expose-headers'] = this.exposeHeaders
  }

  /** The preflight part added to answerHeaders' for an allowed origin, for a path accepting `methods` (its Allow). */
  preflightHeaders(methods: string, headers: Record<string, string>): void {
    headers['access-control-allow-methods'] = methods
    headers['access-control-allow-headers'] = this.allowHeaders
    headers['access-control-max-age'] = String(CORS_MAX_AGE_S)
  }
}
