/**
 * One request, start to end: rate limit (a live bearer session's payer bucket, else the IP's; health probes none) →
 * body limit → route → JSON content type → validation → wired parts → proof of the named payer (free payer-scoped
 * routes; issue 29) → free refusals and replays (precheck) → proof of the credits payer → payment authorize →
 * handler → settle → the call's unit of work appended → envelope (the payment seam is described in payments/PaymentGate.ts). Every answer carries x-request-id and the RateLimit-* headers; every refusal is the spec's error
 * envelope; an unexpected throw becomes INTERNAL with a generic message (the real error goes to the log).
 */
import type { Logger } from 'pino'
import { serializeSuccess, type MetaPricing } from './envelope.ts'
import { ServiceError } from '../common/ServiceError.ts'
import type { IncomingRequest } from './http/UwsAdapter.ts'
import { JSON_TYPE, type AnswerWriter } from './http/ResponseWriter.ts'
import { RequestIds } from './http/RequestIds.ts'
import { Cors } from './http/Cors.ts'
import { priceOf, UNMEASURED_LADDER, type Price } from '../product/billing/pricing.ts'
import type { PaidCall } from '../pipeline/journal/PaidCall.ts'
import { UnitOfWork } from '../pipeline/journal/UnitOfWork.ts'
import type { PaymentGrant, ReleaseCause, SettleOutcome } from './payments/PaymentGate.ts'
import { pricingKeyFor } from './routes/derive.ts'
import { RequestContext } from './RequestContext.ts'
import { RequestValidator } from './routes/RequestValidator.ts'
import { Router, type RouteMatch } from './routes/router.ts'
import type { HandlerContext, HandlerResult, RouteDef } from './routes/types.ts'
import type { StaticDocuments } from './docs/StaticDocuments.ts'
import type { Services } from './Services.ts'
import type { RateDecision } from './RateLimiter.ts'
import type { AccessLog } from './metrics/AccessLog.ts'
import { ProofRefusal } from '../product/identity/ProofRefusal.ts'
import { SIWX_EXTENSION, SIWX_HEADER, claimedAddress } from '../product/identity/SignInWithX.ts'
import { CHALLENGE_PATH, SIGN_IN_HOWTO } from './auth/signInHowTo.ts'
import { callerPayer } from './routes/define.ts'
import { ADDRESS_PATTERN } from '../common/schema.ts'
import { malformedPayer } from './payments/CreditsPaymentGate.ts'
import { buildPaymentRequired, decodeHeader, encodeHeader } from './payments/x402.ts'
import { UNMATCHED_ROUTE, type RequestMetrics } from './metrics/RequestMetrics.ts'
import type { ServiceMetrics } from './metrics/ServiceMetrics.ts'
import { LogError } from '../pipeline/log/LogError.ts'
import type { EventStream, StreamReader } from '../common/EventStream.ts'
import type { StreamFanout } from './streams/StreamFanout.ts'
import { EVENT_LOG_PROVIDER, EVENT_LOG_RETRY_AFTER_MS } from '../product/platform/EventLogHealth.ts'
import { REQUEST_HEADER, RESPONSE_HEADER } from './http/apiHeaders.ts'
import type { PayerOwners } from './cluster/PayerOwners.ts'

export class Dispatcher {
  private readonly router: Router
  private readonly validators = new Map<RouteDef, RequestValidator>()
  private readonly log: Logger
  private readonly ids = new RequestIds()
  /** JSON of the constant meta.methodology_version. */
  private readonly methodologyJson: string
  private readonly metrics: ServiceMetrics | null
  private readonly requestMetrics: RequestMetrics | null
  private readonly accessLog: AccessLog | null
  /** Cross-origin access for browser pages; null when no origin is configured (no CORS work, no CORS header). */
  private readonly cors: Cors | null
  /** Several instances (issue 32): who serves a payer's credits; null on one instance (this one serves every payer). */
  private readonly owners: PayerOwners | null

  constructor(
    routes: readonly RouteDef[],
    private readonly services: Services,
    private readonly documents: StaticDocuments,
    accessLog: AccessLog | null = null,
    private readonly streams: StreamFanout | null = null,
  ) {
    this.router = new Router(routes)
    for (const r of routes) this.validators.set(r, new RequestValidator(r))
    this.log = services.logger
    this.methodologyJson = JSON.stringify(services.config.methodologyVersion)
    this.metrics = services.metrics ?? null
    this.requestMetrics = this.metrics?.requests ?? null
    this.accessLog = accessLog
    this.cors = Cors.of(services.config.corsOrigins ?? [], routes)
    this.owners = services.payerOwners ?? null
  }

  /**
   * Synchronous up to the first thing that must wait: a free route whose handler answers from memory is written
   * before this returns (no promise, no microtask); a handler's promise or a paid call continues asynchronously.
   */
  readonly handle = (req: IncomingRequest, res: AnswerWriter): void | Promise<void> => {
    const started = performance.now()
    const requestId = this.ids.next()
    const now = this.services.clock.now()
    const m = this.router.match(req.method, req.path)
    const headers: Record<string, string> = { [RESPONSE_HEADER.requestId]: requestId }
    const cors = this.cors
    if (cors !== null) {
      const origin = req.header ? req.header('origin') : req.headers.origin
      if (origin !== undefined && req.method === 'OPTIONS') {
        const announced = req.header ? req.header('access-control-request-method') : req.headers['access-control-request-method']
        if (announced !== undefined) return this.preflight(req, res, cors, origin, m, headers, started)
      }
      cors.answerHeaders(origin, headers)
    }
    // Issue 29: a live bearer session is the proven payer's own bucket; everyone else (a name without proof included)
    // spends their IP's. So repeats naming a victim never touch the victim's bucket. Health probes are not limited.
    let bearer: string | null = null
    let rl: RateDecision | null = null
    if (m.kind !== 'found' || m.route.unlimited !== true) {
      const authorization = req.header ? req.header(REQUEST_HEADER.authorization) : req.headers[REQUEST_HEADER.authorization]
      if (authorization !== undefined) {
        const b = this.services.payerProof.bearer(authorization, now)
        if (b !== 'invalid') bearer = b
      }
      // A request another instance forwarded (a valid peer token) was limited there, in the caller's bucket: the
      // answer relayed carries that instance's RateLimit-* headers, so it is not counted twice.
      if (this.owners === null || !this.owners.fromPeer(req, now)) {
        rl = bearer !== null ? this.services.rateLimiter.takePayer(bearer, now) : this.services.rateLimiter.takeIp(req.ip, now)
        headers[RESPONSE_HEADER.rateLimitLimit] = rl.limit === this.limitFor ? this.limitText : this.rememberLimit(rl.limit)
        headers[RESPONSE_HEADER.rateLimitRemaining] = String(rl.remaining)
        headers[RESPONSE_HEADER.rateLimitReset] = String(rl.resetSec)
      }
    }
    // Which time the answer lives in (present or a tape's virtual time): on every answer, errors included.
    const dataTime = this.services.dataTime
    if (dataTime) headers[RESPONSE_HEADER.dataTime] = dataTime.header()
    let route: RouteDef | null = null
    try {
      if (rl !== null && !rl.allowed) throw rateLimited(rl)
      if (req.bodyTooLarge) {
        throw new ServiceError('PAYLOAD_TOO_LARGE', { detail: { limit_bytes: this.services.config.maxBodyBytes } })
      }
      if (m.kind === 'not_found') throw new ServiceError('ROUTE_NOT_FOUND', { detail: { path: req.path } })
      if (m.kind === 'bad_path') {
        throw new ServiceError('VALIDATION', { detail: { reason: 'REQUEST_VALIDATION_FAILED', field: '/path' } })
      }
      if (m.kind === 'method_not_allowed') {
        throw new ServiceError('METHOD_NOT_ALLOWED', { headers: { [RESPONSE_HEADER.allow]: m.allow }, detail: { method: req.method, allow: m.allow } })
      }
      route = m.route
      if (route.request.body && req.body !== null && req.body.length > 0) requireJson(req)
      const ctx = this.context(req, route, m.params, requestId, now)
      const validator = this.validators.get(route)!
      if (!validator.empty) validator.check(ctx as unknown as Record<'params' | 'query' | 'headers' | 'body', unknown>)
      if (route.needs) for (const part of route.needs) ctx.need(part)
      if (this.owners !== null) {
        const payer = this.payerScope(route, ctx)
        if (payer !== null) {
          const at = this.owners.at(payer, req, ctx.now)
          if (at !== null) return this.servedByOwner(at, req, res, route, ctx, headers, started, bearer)
        }
      }
      return this.serve(req, res, route, ctx, headers, started, bearer)
    } catch (err) {
      this.writeError(res, err, requestId, headers, req, route, started, null)
    }
  }

  /**
   * The payer whose credits or own state this request reads or moves (issue 32), from the route registry: the payer a
   * payer-scoped route names, the payer an operator's credit route or a sign-in names (creditsOf), or the credits
   * payer of a paid call (x-svc-payer without PAYMENT-SIGNATURE); null for everything else (an x402 payment proves its
   * own payer, and a credit purchase only adds a lot, idempotent by its payment id).
   */
  private payerScope(route: RouteDef, ctx: HandlerContext): string | null {
    if (route.payer) return callerPayer(ctx, route.payer.header, route.payer.field ?? null)
    if (route.creditsOf === 'body') return typeof ctx.body.payer === 'string' ? ctx.body.payer : null
    if (route.creditsOf === 'sign-in') {
      const signed = ctx.headers[SIWX_HEADER]
      const claimed = signed === undefined ? null : claimedAddress(signed)
      return claimed !== null && ADDRESS_PATTERN.test(claimed) ? claimed : null
    }
    if (route.pay.kind !== 'paid' || ctx.headers[REQUEST_HEADER.paymentSignature] !== undefined) return null
    const payer = ctx.headers[REQUEST_HEADER.payer]
    return payer !== undefined && ADDRESS_PATTERN.test(payer) ? payer : null
  }

  /** Served here once this instance's takeover of the payer's partition caught up, or the owner's answer relayed. */
  private async servedByOwner(
    at: Exclude<ReturnType<PayerOwners['at']>, null>, req: IncomingRequest, res: AnswerWriter, route: RouteDef, ctx: HandlerContext,
    headers: Record<string, string>, started: number, bearer: string | null,
  ): Promise<void> {
    try {
      if (at.kind === 'ready') {
        await at.ready
        return await this.serve(req, res, route, ctx, headers, started, bearer)
      }
      const answer = await at.answer
      // Unchanged but for the RateLimit-* headers: the caller's bucket is this instance's (the owner did not count it).
      for (const name of [RESPONSE_HEADER.rateLimitLimit, RESPONSE_HEADER.rateLimitRemaining, RESPONSE_HEADER.rateLimitReset]) {
        const mine = headers[name]
        if (mine !== undefined) answer.headers[name.toLowerCase()] = mine
      }
      res.send(answer.status, answer.headers, answer.body)
      this.answered(route, req, answer.status, started, ctx.request_id, null)
    } catch (err) {
      this.writeError(res, err, ctx.request_id, headers, req, route, started, null)
    }
  }

  /** A matched, validated request served by this instance: paid, free payer-scoped, or free. */
  private serve(req: IncomingRequest, res: AnswerWriter, route: RouteDef, ctx: HandlerContext, headers: Record<string, string>, started: number, bearer: string | null): void | Promise<void> {
    const requestId = ctx.request_id
    try {
      if (route.pay.kind === 'paid') return this.paid(req, res, route, ctx, headers, started, bearer)
      const free = route
      if (route.payer) {
        // A session that proves the named payer is checked synchronously; anything else (a sign-in to verify, a refusal) waits.
        const named = callerPayer(ctx, route.payer.header, route.payer.field ?? null)
        if (bearer === null || bearer !== named.toLowerCase()) {
          return this.proveFree(ctx, free, named, bearer)
            .then(() => route!.handler(ctx))
            .then((result) => this.writeResult(res, result, ctx, headers, free, req, started))
            .catch((err: unknown) => this.writeError(res, err, requestId, headers, req, free, started, null))
        }
      }
      const out = route.handler(ctx)
      if (out instanceof Promise) {
        return out
          .then((result) => this.writeResult(res, result, ctx, headers, free, req, started))
          .catch((err: unknown) => this.writeError(res, err, requestId, headers, req, free, started, null))
      }
      this.writeResult(res, out, ctx, headers, route, req, started)
    } catch (err) {
      this.writeError(res, err, requestId, headers, req, route, started, null)
    }
  }

  /**
   * A CORS preflight (OPTIONS with Origin and Access-Control-Request-Method), answered for the path, not the method
   * announced: 204 with the path's methods from the registry, and the browser itself refuses a method outside them.
   * Not rate-limited: the browser sends it on its own before the call it announces, and that call is limited. Any
   * OPTIONS without both headers is not CORS and keeps the registry's 405 with Allow.
   */
  private preflight(req: IncomingRequest, res: AnswerWriter, cors: Cors, origin: string, m: RouteMatch, headers: Record<string, string>, started: number): void {
    const requestId = headers[RESPONSE_HEADER.requestId]!
    cors.answerHeaders(origin, headers)
    try {
      if (!cors.allows(origin)) {
        throw new ServiceError('ORIGIN_FORBIDDEN', { detail: { origin } })
      }
      if (m.kind === 'not_found') throw new ServiceError('ROUTE_NOT_FOUND', { detail: { path: req.path } })
      if (m.kind === 'bad_path') throw new ServiceError('VALIDATION', { detail: { reason: 'REQUEST_VALIDATION_FAILED', field: '/path' } })
      cors.preflightHeaders(m.kind === 'found' ? m.route.method : m.allow, headers)
      res.send(204, headers, '')
      this.answered(null, req, 204, started, requestId, null)
    } catch (err) {
      this.writeError(res, err, requestId, headers, req, null, started, null)
    }
  }

  /** A free payer-scoped route: the caller proves `named`, or a typed 401 says how to sign in (nothing ran). */
  private async proveFree(ctx: HandlerContext, route: RouteDef, named: string, bearer: string | null): Promise<void> {
    try {
      await this.services.payerProof.require(named, ctx.headers, ctx.now, bearer)
    } catch (err) {
      if (!(err instanceof ProofRefusal)) throw err
      const challenge = this.services.payerProof.challenge(this.resourceUrl(ctx.path, ''), ctx.now)
      throw new ServiceError('PAYER_UNPROVEN', {
        message: err.message,
        headers: { [RESPONSE_HEADER.wwwAuthenticate]: this.wwwAuthenticate(), 'cache-control': 'no-store' },
        detail: { reason: err.reason, ...err.detail, payer: named.toLowerCase(), route: route.id, sign_in: SIGN_IN_HOWTO, [SIWX_EXTENSION]: challenge },
      })
    }
  }

  private wwwAuthenticate(): string {
    const realm = new URL(this.documents.baseUrl).host
    return `SIWX realm="${realm}", challenge="${this.documents.baseUrl}${CHALLENGE_PATH}", Bearer realm="${realm}"`
  }

  private resourceUrl(path: string, query: string): string {
    return `${this.documents.baseUrl}${path}${query ? `?${query}` : ''}`
  }

  /** A paid route: authorize, handler, settle and commit (see payments/PaymentGate.ts), then the envelope. */
  private async paid(req: IncomingRequest, res: AnswerWriter, route: RouteDef, ctx: HandlerContext, headers: Record<string, string>, started: number, bearer: string | null): Promise<void> {
    try {
      const free = route.precheck ? await route.precheck(ctx) : undefined
      if (free) return this.writeResult(res, free, ctx, headers, route, req, started)
      // A paid answer is recorded on the event log: while the log cannot be reached, refuse before anything is
      // reserved or charged (a call here used to wait out the outage and then answer 500; issue 31).
      const logDown = this.eventLogDown()
      if (logDown) throw logDown
      const call = await this.authorize(ctx, route, req, headers, bearer)
      let result: HandlerResult
      try {
        const out = route.handler(ctx)
        result = out instanceof Promise ? await out : out
      } catch (err) {
        call.unit.abort()
        await this.release(call.grant, 'handler_failed', ctx.request_id)
        throw isLogUnavailable(err) ? this.eventLogUnreachable(null) : err
      }
      const charged = await this.capture(call, ctx.request_id, headers, result)
      if (charged && this.metrics) this.metrics.paid(call.grant.rail, ctx.price)
      this.writeResult(res, result, ctx, headers, route, req, started)
    } catch (err) {
      this.writeError(res, err, ctx.request_id, headers, req, route, started, ctx.payment)
    }
  }

  /** RateLimit-Limit as text, kept for the bucket size last seen (one policy per limiter, so nearly always a hit). */
  private limitFor = Number.NaN
  private limitText = ''
  private rememberLimit(limit: number): string {
    this.limitFor = limit
    this.limitText = String(limit)
    return this.limitText
  }

  private context(req: IncomingRequest, route: RouteDef, params: Record<string, string>, requestId: string, now: number): HandlerContext {
    return new RequestContext(
      requestId,
      now,
      req.method,
      req.path,
      params,
      req.query ? Object.fromEntries(new URLSearchParams(req.query)) : {},
      route.request.body ? parseBody(req.body) : {},
      req,
      req.ip,
      this.services,
      this.documents,
    )
  }

  /** Step 1 of the payment seam (see PaymentGate.ts): authorize, per-payer limit, hand the handler its unit of work. */
  private async authorize(ctx: HandlerContext, route: RouteDef, req: IncomingRequest, headers: Record<string, string>, bearer: string | null): Promise<CallInFlight> {
    const measures = this.services.ladder ? await this.services.ladder.measures() : UNMEASURED_LADDER
    const price: Price = priceOf(pricingKeyFor(route, ctx.params), measures.rung)
    const resourceUrl = this.resourceUrl(req.path, req.query)
    const named = route.payer ? callerPayer(ctx, route.payer.header, route.payer.field ?? null).toLowerCase() : null
    // The credits rail moves the named payer's balance: it is proven before anything is reserved (issue 29). An x402
    // payment proves its own payer (checked against the name below, once the rail verified it).
    const creditsPayer = ctx.headers[REQUEST_HEADER.paymentSignature] === undefined ? ctx.headers[REQUEST_HEADER.payer] : undefined
    if (creditsPayer !== undefined) {
      // A malformed name is the caller's typo, answered as one before anything asks it to sign.
      if (!ADDRESS_PATTERN.test(creditsPayer)) throw malformedPayer()
      // The session checked at the door proves the named payer: nothing more to wait for (the common, hot case).
      if (bearer === null || bearer !== creditsPayer.toLowerCase()) {
        try {
          await this.services.payerProof.require(creditsPayer, ctx.headers, ctx.now, bearer)
        } catch (err) {
          if (!(err instanceof ProofRefusal)) throw err
          throw this.signInChallenge(err, price, resourceUrl, route, ctx.now)
        }
      }
    }
    const outcome = await this.services.paymentGate.authorize(
      {
        request_id: ctx.request_id,
        method: req.method,
        path: req.path,
        resource_url: resourceUrl,
        headers: req.headers,
        route_id: route.id,
        route_summary: route.summary,
        question_id: route.questionOf ? route.questionOf(ctx) : null,
        ...(route.paymentRef ? { payment_ref: (ctx.paymentRef = route.paymentRef(ctx)) } : {}),
      },
      price,
    )
    if (outcome.kind === 'challenge') throw this.withSignIn(outcome.error, resourceUrl, ctx.now)
    if (named !== null && outcome.payer !== null && outcome.payer.toLowerCase() !== named) {
      await this.release(outcome, 'payer_mismatch', ctx.request_id)
      const payer = outcome.payer.toLowerCase()
      throw new ServiceError('PAYER_UNPROVEN', {
        message: `The payment is from ${payer}, not from the payer named (${named}); the payer of a paid call is the address that pays.`,
        detail: { reason: 'PROOF_FOR_OTHER_PAYER', proven: payer, named },
      })
    }
    // A bearer's calls already spent its bucket at the door; a payer proven here (x402, a sign-in) spends it now.
    if (outcome.payer && outcome.payer.toLowerCase() !== bearer) {
      const prl = this.services.rateLimiter.takePayer(outcome.payer, ctx.now)
      if (!prl.allowed) {
        await this.release(outcome, 'rate_limited', ctx.request_id)
        throw rateLimited(prl)
      }
    }
    if (outcome.response_headers) Object.assign(headers, outcome.response_headers)
    const unit = new UnitOfWork()
    ctx.payment = { kind: 'paid', payment_id: outcome.payment_id, rail: outcome.rail, payer: outcome.payer }
    ctx.unit = unit
    ctx.price = price
    return { grant: outcome, unit }
  }

  /**
   * The 402 of an unproven credits call: the x402 challenge (pay per call instead) carrying the sign-in-with-x
   * extension, with the reason the proof was refused. Nothing was reserved.
   */
  private signInChallenge(refusal: ProofRefusal, price: Price, resourceUrl: string, route: RouteDef, now: number): ServiceError {
    const challenge = this.services.payerProof.challenge(resourceUrl, now)
    const required = buildPaymentRequired(price, this.services.config.payTo, { url: resourceUrl, description: route.summary }, 'x-svc-payer must be proven: sign in with the sign-in-with-x extension')
    return new ServiceError('PAYMENT_REQUIRED', {
      message: `${refusal.message} Credits move only for a proven payer.`,
      headers: { [RESPONSE_HEADER.paymentRequired]: encodeHeader({ ...required, extensions: { [SIWX_EXTENSION]: challenge } }), 'Cache-Control': 'no-store', [RESPONSE_HEADER.wwwAuthenticate]: this.wwwAuthenticate() },
      detail: {
        reason: refusal.reason, ...refusal.detail, sign_in: SIGN_IN_HOWTO, [SIWX_EXTENSION]: challenge,
        pricing_key: price.key, credits: price.credits, amount: price.amount_atomic, usd: price.usd, rung: price.rung,
      },
    })
  }

  /** Every 402 challenge also advertises sign-in-with-x, so an agent can prove its address and pay with credits. */
  private withSignIn(error: ServiceError, resourceUrl: string, now: number): ServiceError {
    const header = error.headers[RESPONSE_HEADER.paymentRequired]
    if (error.status !== 402 || header === undefined) return error
    let required: Record<string, unknown>
    try {
      required = decodeHeader<Record<string, unknown>>(header)
    } catch {
      return error
    }
    const challenge = this.services.payerProof.challenge(resourceUrl, now)
    const extensions = { ...(required.extensions as Record<string, unknown> | undefined), [SIWX_EXTENSION]: challenge }
    return new ServiceError(error.code, {
      message: error.message,
      ...(error.retryAfterMs !== null ? { retryAfterMs: error.retryAfterMs } : {}),
      headers: { ...error.headers, [RESPONSE_HEADER.paymentRequired]: encodeHeader({ ...required, extensions }) },
      detail: error.detail,
    })
  }

  /**
   * Steps 3–4: settle, then append the call's unit of work (what the answer writes, with the rail's own records: a
   * credits debit and its answer receipt) as one atomic unit. A failed settlement releases the reservation and answers
   * its own refusal; the unit is dropped, so nothing is recorded.
   */
  private async capture(call: CallInFlight, requestId: string, headers: Record<string, string>, result: HandlerResult): Promise<boolean> {
    const { grant, unit } = call
    // A re-served recorded answer is not charged: release instead of settling (nothing of it is written).
    if ('charge' in result && result.charge === false) {
      unit.abort()
      await this.release(grant, 'not_charged', requestId)
      return false
    }
    let outcome: SettleOutcome
    try {
      outcome = grant.settle ? await grant.settle({ refusal: 'refusal' in result && result.refusal === true }, unit) : { ok: true }
    } catch (err) {
      this.log.error({ err, request_id: requestId, payment_id: grant.payment_id }, 'settle threw')
      unit.abort()
      await this.release(grant, 'settle_failed', requestId)
      throw new ServiceError('INTERNAL')
    }
    if (!outcome.ok) {
      unit.abort()
      await this.release(grant, 'settle_failed', requestId)
      throw outcome.error
    }
    if (outcome.response_headers) Object.assign(headers, outcome.response_headers)
    try {
      // The rail's answer receipt joins the same unit: the debit, the answer and its receipt land together or not at all.
      if (grant.recorded) await grant.recorded(unit)
      await unit.commit()
    } catch (err) {
      // A receipt that failed to stage leaves the unit open: abort it so its reservation and any waiting twin are let
      // go (a no-op when the commit itself failed, which already aborted it).
      unit.abort()
      // Credits: nothing of the unit is durable, so nothing is charged (its abort effects dropped the reservation).
      // x402: the payment was captured by the facilitator; the log line is what an operator reconciles from.
      this.log.error({ err, request_id: requestId, payment_id: grant.payment_id, rail: grant.rail }, 'the paid call could not be recorded')
      // The broker did not take the unit in time and it was never written: on credits nothing was charged, so the
      // caller gets the typed, retryable 503 (x402 captured the payment already: that stays an INTERNAL to reconcile).
      if (grant.rail === 'credits' && isLogUnavailable(err)) throw this.eventLogUnreachable(null)
      throw new ServiceError('INTERNAL')
    }
    return true
  }

  /** PROVIDER_DOWN (EVENT_LOG_UNREACHABLE) while the critical `event-log` provider is down, else null. */
  private eventLogDown(): ServiceError | null {
    const row = this.services.providers?.list().find((p) => p.slug === EVENT_LOG_PROVIDER)
    return row?.status === 'down' ? this.eventLogUnreachable(row.error_class) : null
  }

  private eventLogUnreachable(errorClass: string | null): ServiceError {
    return new ServiceError('PROVIDER_DOWN', {
      message: 'The event log cannot be reached, so the answer cannot be recorded; nothing was charged.',
      retryAfterMs: EVENT_LOG_RETRY_AFTER_MS,
      detail: { reason: 'EVENT_LOG_UNREACHABLE', provider: EVENT_LOG_PROVIDER, ...(errorClass ? { error_class: errorClass } : {}) },
    })
  }

  private async release(grant: PaymentGrant, cause: ReleaseCause, requestId: string): Promise<void> {
    if (!grant.release) return
    try {
      await grant.release(cause)
    } catch (err) {
      this.log.error({ err, request_id: requestId, payment_id: grant.payment_id, cause }, 'payment release failed')
    }
  }

  private writeResult(res: AnswerWriter, result: HandlerResult, ctx: HandlerContext, headers: Record<string, string>, route: RouteDef, req: IncomingRequest, started: number): void {
    if ('stream' in result) return this.openStream(res, result.stream, ctx, headers, route, req, started)
    if ('raw' in result) {
      const r = result.raw
      headers['content-type'] = r.contentType
      if (r.headers) Object.assign(headers, r.headers)
      const status = r.status ?? 200
      res.send(status, headers, r.body)
      this.answered(route, req, status, started, ctx.request_id, ctx.payment)
      return
    }
    if ('redirect' in result) {
      headers.location = result.redirect
      const status = result.status ?? 302
      res.send(status, headers, '')
      this.answered(route, req, status, started, ctx.request_id, ctx.payment)
      return
    }
    headers['content-type'] = JSON_TYPE
    if (result.headers) Object.assign(headers, result.headers)
    if (ctx.payment) headers['cache-control'] = 'private, no-store'
    // RequestIds are hex digits and dashes, so their JSON is the id in quotes. The body is sent before anything else
    // runs: a large one is lent memory that the next large envelope reuses (byteSlab slabConcat).
    const body = serializeSuccess(result.data, '"' + ctx.request_id + '"', ctx.now, this.methodologyJson, metaPricing(ctx.price, ctx.payment), result.meta)
    const status = result.status ?? 200
    res.send(status, headers, body, true)
    this.answered(route, req, status, started, ctx.request_id, ctx.payment)
  }

  /**
   * A stream route accepted (issue 33): the same door as every route (rate limit, validation, payer proof, the cursor
   * read) ran before; here the IP's stream cap, then the socket becomes an SSE stream (GET) or a WebSocket (upgrade).
   */
  private openStream(res: AnswerWriter, stream: { source: EventStream; reader: StreamReader }, ctx: HandlerContext, headers: Record<string, string>, route: RouteDef, req: IncomingRequest, started: number): void {
    try {
      if (this.streams === null || res.stream === undefined) throw new ServiceError('VALIDATION', { message: 'A stream route is read over SSE or a WebSocket, not here.', detail: { reason: 'REQUEST_VALIDATION_FAILED', field: '/path' } })
      this.streams.admit(ctx.ip)
    } catch (err) {
      return this.writeError(res, err, ctx.request_id, headers, req, route, started, null)
    }
    if (req.method === 'HEAD') {
      // A HEAD gets the stream's head only: nothing is opened.
      res.send(200, { ...headers, 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store' }, '')
      return this.answered(route, req, 200, started, ctx.request_id, null)
    }
    const conn = res.stream(headers)
    this.answered(route, req, 200, started, ctx.request_id, null)
    if (conn) this.streams.attach(conn, ctx.ip, stream.source, stream.reader)
  }

  private writeError(
    res: AnswerWriter,
    err: unknown,
    requestId: string,
    headers: Record<string, string>,
    req: IncomingRequest,
    route: RouteDef | null,
    started: number,
    payment: PaidCall | null,
  ): void {
    let se: ServiceError
    if (err instanceof ServiceError) se = err
    else {
      this.log.error({ err, request_id: requestId, method: req.method, path: req.path }, 'unhandled error in request')
      se = new ServiceError('INTERNAL')
    }
    headers['content-type'] = JSON_TYPE
    Object.assign(headers, se.headers)
    if (se.retryAfterMs !== null) headers[RESPONSE_HEADER.retryAfter] = String(Math.max(1, Math.ceil(se.retryAfterMs / 1000)))
    res.send(se.status, headers, JSON.stringify(se.toEnvelope(requestId)))
    this.answered(route, req, se.status, started, requestId, payment)
  }

  /**
   * Counts an answer into /metrics and the access log (after it is written: neither delays the response). A refusal
   * before routing (rate limit, body too large) still names the route the path would have matched.
   */
  private answered(route: RouteDef | null, req: IncomingRequest, status: number, started: number, requestId: string, payment: PaidCall | null): void {
    if (this.requestMetrics === null && this.accessLog === null) return
    const seconds = (performance.now() - started) / 1000
    const routeId = route !== null ? route.id : this.routeIdOf(req)
    this.requestMetrics?.observe(routeId, status, seconds)
    this.accessLog?.answered(requestId, routeId, req.method, req.path, status, seconds * 1000, payment ? payment.rail : null)
  }

  private routeIdOf(req: IncomingRequest): string {
    const m = this.router.match(req.method, req.path)
    return m.kind === 'found' ? m.route.id : UNMATCHED_ROUTE
  }

  /** Last resort for a throw that escaped handle() (writes only if nothing was written). */
  readonly onEscaped = (err: unknown, req: IncomingRequest, res: AnswerWriter): void => {
    this.log.error({ err, method: req.method, path: req.path }, 'error escaped the dispatcher')
    const id = this.ids.next()
    res.send(500, { 'content-type': JSON_TYPE, [RESPONSE_HEADER.requestId]: id }, JSON.stringify(new ServiceError('INTERNAL').toEnvelope(id)))
  }
}

/** A paid call in flight: the rail's grant and its unit of work. */
interface CallInFlight {
  grant: PaymentGrant
  unit: UnitOfWork
}

/** The broker did not take a unit within its deadline (KafkaUnitWriter): nothing of it was written. */
function isLogUnavailable(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof LogError && e.code === 'LOG_UNAVAILABLE') return true
  }
  return false
}

/** The 429 carries the headers of the bucket that refused, and one wait (reset = Retry-After = retry_after_ms / 1000). */
function rateLimited(rl: RateDecision): ServiceError {
  return new ServiceError('RATE_LIMITED', {
    retryAfterMs: rl.retryAfterMs,
    headers: { [RESPONSE_HEADER.rateLimitLimit]: String(rl.limit), [RESPONSE_HEADER.rateLimitRemaining]: String(rl.remaining), [RESPONSE_HEADER.rateLimitReset]: String(rl.resetSec) },
    detail: { limit: rl.limit, reset_s: rl.resetSec },
  })
}

/** Issue 29: "A body that is not application/json on a JSON route is 415" (a JSON suffix type such as +json counts). */
function requireJson(req: IncomingRequest): void {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase()
  if (type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'))) return
  throw new ServiceError('UNSUPPORTED_MEDIA_TYPE', { detail: { reason: 'BODY_NOT_JSON', content_type: type === '' ? null : type } })
}

/** Spec: "Bodies are JSON." An empty body reads as {} (e.g. replay accepts "body {} or { ruleset_version }"). */
function parseBody(body: Buffer | null): Record<string, unknown> {
  if (!body || body.length === 0) return {}
  try {
    return JSON.parse(body.toString('utf8')) as Record<string, unknown>
  } catch {
    throw new ServiceError('VALIDATION', {
      message: 'The body is not valid JSON.',
      detail: { reason: 'MALFORMED_JSON', field: '/body' },
    })
  }
}

function metaPricing(price: Price | null, payment: PaidCall | null): MetaPricing | null {
  if (!price || !payment) return null
  return { key: price.key, credits: price.credits, usd: price.usd, rung: price.rung, rail: payment.rail, payment_id: payment.payment_id }
}
