/**
 * Decision routes (spec, Decisions, ledger and duel): the free ledger reads (a decision, the latest one, its
 * resolution, its lineage, replay, open clocks, the feed), the payer's own asks and calls, and the paid asks (a
 * decision, the next one). Transport
 * only: the answers and their meta come from the engine (engine/EngineServices.ts decisionAnswer), every decision record
 * signed beside it (./signatures.ts).
 */
import { andThen } from '../../common/MaybePromise.ts'
import { Address, CanonicalAsset, Chain, DecisionIdOrPrefix, Open, QuestionId, Strict, Type, Uuid } from '../../common/schema.ts'
import { DECISION_RECORD, FEED, LINEAGE, OPEN_CLOCKS, REPLAY_RESULT, RESOLUTION, type DecisionRead } from '../../engine/schemas.ts'
import { RISK_CANDIDATE } from '../../models/account/accountSnapshot.ts'
import { ACCOUNT_QUESTION_IDS } from '../../models/questions/index.ts'
import { CURSOR_PARAM, DECISION_ID_PARAMS, FREE, callerPayer, cursorOf, env, notFound, paid } from './define.ts'
import { payerHistory } from '../../product/history/payerHistory.ts'
import { PAYER_HISTORY } from '../../product/history/schemas.ts'
import { signRecords, signedDecision } from './signatures.ts'
import type { HandlerContext, HandlerResult, RouteDef } from './types.ts'

/**
 * The Arena's ask XP joins the paid call's unit of work (so it exists exactly when the paid decision does): the payer
 * is the payment's, since the decision record names none. A re-served decision is not charged and earns nothing.
 */
function askedIn(ctx: HandlerContext, read: DecisionRead): void {
  if (read.reserved || !ctx.payment || !ctx.unit) return
  ctx.services.arena?.recordAskIn(ctx.unit, ctx.payment, { decision_id: read.record.decision_id, question_id: read.record.question_id, asset: read.record.asset ?? '' })
  ctx.services.delivery?.recordAskIn(ctx.unit, ctx.payment, read.record.decision_id)
}

export const DECISION_ROUTES: readonly RouteDef[] = [
  {
    id: 'decisions.latest',
    method: 'GET',
    path: '/v1/decisions/latest',
    summary: 'Newest recorded decision for a question and asset (refusals included)',
    tags: ['decisions'],
    pay: FREE,
    needs: ['ledger'],
    request: { query: Open({ question_id: QuestionId, asset: CanonicalAsset }) },
    response: env(DECISION_RECORD),
    errors: ['DECISION_NOT_FOUND'],
    handler: async (ctx) => {
      const read = await ctx.need('ledger').latestDecision({ question_id: String(ctx.query.question_id), asset: String(ctx.query.asset) })
      return read ? signedDecision(ctx, read) : notFound('DECISION_NOT_FOUND', '/query', ctx.query)
    },
  },
  {
    id: 'decisions.mine',
    method: 'GET',
    path: '/v1/decisions/mine',
    summary: "The payer's own paid asks and duel calls, newest first, paged by cursor",
    description:
      "One row per decision the payer asked and paid for (kind ask: the verdict, probability and how it resolved) and per call it locked (kind call: the call and its grade), newest first by the decision's created_at or the call's locked_at. The payer comes from the query parameter payer or the x-svc-payer header and must be proven (sign-in-with-x or a session), as on every payer-scoped route; another payer's list is refused. next_cursor (null at the end) continues after the page's last row.",
    tags: ['decisions'],
    pay: FREE,
    payer: { header: 'x-svc-payer', field: 'query' },
    needs: ['ledger', 'duel', 'delivery'],
    request: {
      headers: Type.Object({ 'x-svc-payer': Type.Optional(Address) }),
      query: Open({ payer: Type.Optional(Address), limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })), cursor: CURSOR_PARAM }),
    },
    response: env(PAYER_HISTORY),
    errors: [],
    handler: async (ctx) => {
      const delivery = ctx.need('delivery')
      const duel = ctx.need('duel')
      const sources = { asks: (p: string) => delivery.asksOf(p), calls: (p: string, before: readonly [string, string] | null, limit: number) => duel.callsPage(p, before, limit), ledger: ctx.need('ledger') }
      return { data: await payerHistory(sources, callerPayer(ctx, 'x-svc-payer', 'query'), { limit: Number(ctx.query.limit), cursor: cursorOf(ctx) }) }
    },
  },
  {
    id: 'decisions.get',
    method: 'GET',
    path: '/v1/decisions/{decision_id}',
    summary: 'A stored decision record',
    tags: ['decisions'],
    pay: FREE,
    mcp: {
      name: 'svc_get_decision',
      description: 'Read back a recorded decision by its decision_id: the probability, confidence, verdict and the hashes it was recorded with. Free; never calls a model.',
    },
    needs: ['ledger'],
    request: { params: DECISION_ID_PARAMS },
    response: env(DECISION_RECORD),
    errors: ['DECISION_NOT_FOUND'],
    // A promise of a promise is one promise at run time (then flattens); the cast only tells the checker so.
    handler: (ctx) =>
      andThen(ctx.need('ledger').getDecision(String(ctx.params.decision_id)), (read) =>
        read ? signedDecision(ctx, read) : notFound('DECISION_NOT_FOUND', '/params/decision_id', ctx.params.decision_id),
      ) as HandlerResult | Promise<HandlerResult>,
  },
  {
    id: 'decisions.replay',
    method: 'POST',
    path: '/v1/decisions/{decision_id}/replay',
    summary: 'Replays a decision against its journaled inputs under its (or a pinned) ruleset',
    tags: ['decisions'],
    pay: FREE,
    needs: ['engine'],
    request: {
      params: DECISION_ID_PARAMS,
      // The pin in any form the service writes or a person types: the served policy_version ('policy-3.0.0'), '3.0.0'
      // or 'v3.0.0'.
      body: Strict({ ruleset_version: Type.Optional(Type.String({ pattern: '^(policy-|v)?[0-9]+\\.[0-9]+\\.[0-9]+$' })) }),
    },
    response: env(REPLAY_RESULT),
    errors: ['DECISION_NOT_FOUND', 'REPLAY_INPUT_LOST'],
    handler: async (ctx) => {
      const pin = typeof ctx.body.ruleset_version === 'string' ? ctx.body.ruleset_version : null
      const r = await ctx.need('engine').replay(String(ctx.params.decision_id), { ruleset_version: pin })
      return r ? { data: r } : notFound('DECISION_NOT_FOUND', '/params/decision_id', ctx.params.decision_id)
    },
  },
  {
    id: 'resolutions.get',
    method: 'GET',
    path: '/v1/resolutions/{decision_id}',
    summary: 'Resolution record, or pending with horizon_end',
    tags: ['decisions'],
    pay: FREE,
    mcp: {
      name: 'svc_get_resolution',
      description:
        "How a recorded decision resolved once its horizon ended: obtains, not or unresolvable, with the measured statistic; or status 'pending' with horizon_end before then. Free.",
    },
    needs: ['ledger'],
    request: { params: DECISION_ID_PARAMS },
    response: env(RESOLUTION),
    errors: ['DECISION_NOT_FOUND'],
    handler: async (ctx) => {
      const r = await ctx.need('ledger').resolution(String(ctx.params.decision_id))
      return r ? { data: r, meta: { state: r.status } } : notFound('DECISION_NOT_FOUND', '/params/decision_id', ctx.params.decision_id)
    },
  },
  {
    id: 'lineage.get',
    method: 'GET',
    path: '/v1/lineage/{decision_id}',
    summary: 'Lineage bundle of one decision (id or unique prefix of 8+ characters); a ledger read only',
    tags: ['decisions'],
    pay: FREE,
    mcp: {
      name: 'svc_lineage',
      description:
        'Where a decision came from: its record, resolution, payment rail, input sources and hashes, and whether the journaled inputs and model state still verify (true, false or unknown). Accepts a unique id prefix of 8+ characters. Free.',
    },
    needs: ['ledger'],
    request: { params: Type.Object({ decision_id: DecisionIdOrPrefix }, { additionalProperties: false }) },
    response: env(LINEAGE),
    errors: ['DECISION_NOT_FOUND'],
    handler: async (ctx) => {
      const r = await ctx.need('ledger').lineage(String(ctx.params.decision_id).toLowerCase())
      return r ? signRecords(ctx, { data: r }, [r.decision]) : notFound('DECISION_NOT_FOUND', '/params/decision_id', ctx.params.decision_id)
    },
  },
  {
    id: 'clocks.open',
    method: 'GET',
    path: '/v1/clocks/open',
    summary: 'Open decision clocks, soonest horizon_end first',
    tags: ['decisions'],
    pay: FREE,
    mcp: {
      name: 'svc_open_clocks',
      description:
        'List the decision clocks still open (decision_id, question, asset, the house prediction and horizon_end), soonest horizon first: the clocks you can still lock a call on with svc_call before they resolve. Free.',
    },
    needs: ['ledger'],
    request: {},
    response: env(OPEN_CLOCKS),
    errors: ['STALE_DATA'],
    handler: (ctx) => andThen(ctx.need('ledger').openClocks(), (clocks) => ({ data: { clocks } })),
  },
  {
    id: 'feed',
    method: 'GET',
    path: '/v1/feed',
    summary: 'Resolved decision chips, newest first',
    tags: ['decisions'],
    pay: FREE,
    mcp: {
      name: 'svc_feed',
      description: 'The newest resolved decisions as chips (what was predicted, what happened, whether it matched), newest first. Free; the pollable view of resolutions.',
    },
    needs: ['ledger'],
    request: { query: Open({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })), cursor: CURSOR_PARAM }) },
    response: env(FEED),
    errors: [],
    handler: (ctx) => andThen(ctx.need('ledger').feed({ limit: Number(ctx.query.limit), cursor: cursorOf(ctx) }), (page) => ({ data: page })),
  },
  {
    id: 'decisions.create',
    method: 'POST',
    path: '/v1/decisions',
    summary: 'Ask a catalog question; the answer is recorded as a decision',
    tags: ['decisions'],
    pay: paid('decision.deep'),
    mcp: {
      name: 'svc_decision',
      description:
        'Ask one catalog question (see GET /v1/signals for the live set) about BTC, ETH or SOL and get a calibrated probability recorded on the ledger, with its horizon; it resolves later. A refusal (stale_input, insufficient_confidence, suppress) is an answer with probability 0. Paid (decision.deep); the same inputs re-serve the recorded decision without a new charge.',
    },
    needs: ['engine'],
    questionOf: (ctx) => String(ctx.body.question_id),
    request: {
      // Spec gap (docs/decisions.md): the account-scoped questions name their wallet in `subject` (required for
      // S09..S11, checked before payment); S11 also takes the candidate movement it assesses (as the risk routes).
      body: Type.Object(
        {
          asset: CanonicalAsset,
          chain: Type.Optional(Chain),
          question_id: QuestionId,
          subject: Type.Optional(Address),
          candidate: Type.Optional(RISK_CANDIDATE),
        },
        {
          additionalProperties: false,
          allOf: [
            { if: { properties: { question_id: { enum: [...ACCOUNT_QUESTION_IDS] } }, required: ['question_id'] }, then: { required: ['subject'] } },
            { if: { properties: { question_id: { const: 'S11_risk' } }, required: ['question_id'] }, then: { required: ['candidate'] } },
          ],
        },
      ),
    },
    response: env(DECISION_RECORD),
    errors: ['STALE_DATA'],
    precheck: (ctx) => ctx.need('engine').checkAsk(String(ctx.body.question_id)),
    handler: async (ctx) => {
      const b = ctx.body
      const read = await ctx.need('engine').decide(
        {
          asset: b.asset as CanonicalAsset,
          chain: 'base',
          question_id: String(b.question_id),
          subject: typeof b.subject === 'string' ? b.subject : null,
          candidate: typeof b.candidate === 'object' && b.candidate !== null ? (b.candidate as Record<string, unknown>) : null,
        },
        ctx.payment!,
        ctx.unit!,
      )
      askedIn(ctx, read)
      return signedDecision(ctx, read)
    },
  },
  {
    id: 'decisions.next',
    method: 'POST',
    path: '/v1/decisions/next',
    summary: 'Ask the same question again once the previous clock closed',
    tags: ['decisions'],
    pay: paid('decision.deep'),
    needs: ['engine'],
    request: { body: Strict({ previous_decision_id: Uuid }) },
    response: env(DECISION_RECORD),
    errors: ['CLOCK_OPEN', 'DECISION_NOT_FOUND', 'STALE_DATA'],
    precheck: async (ctx) => {
      if (!(await ctx.need('engine').checkNext(String(ctx.body.previous_decision_id)))) {
        notFound('DECISION_NOT_FOUND', '/body/previous_decision_id', ctx.body.previous_decision_id)
      }
    },
    handler: async (ctx) => {
      const read = await ctx.need('engine').nextDecision(String(ctx.body.previous_decision_id), ctx.payment!, ctx.unit!)
      if (!read) return notFound('DECISION_NOT_FOUND', '/body/previous_decision_id', ctx.body.previous_decision_id)
      askedIn(ctx, read)
      return signedDecision(ctx, read)
    },
  },
]
