/**
 * Duel routes (spec, Decisions, ledger and duel: POST /v1/calls, GET /v1/calls, GET /v1/calls/scoreboard, GET
 * /v1/scoreboard, POST /v1/calls/opt-in). Transport only; the duel domain is product/duel/.
 *
 * Who is asking (spec, Authentication 1: "header x-svc-payer on duel ... routes; a payer field in some bodies"; the
 * endpoint table: "query payer (required)", "body { payer, opt_in }"): the caller-scoped reads take the query
 * parameter payer or the x-svc-payer header, the opt-in the body's payer or the header; one of them is required, and
 * two that differ are refused (docs/decisions.md).
 */
import { Address, Open, Probability, Strict, StringEnum, Type, Uuid } from '../../common/schema.ts'
import { AGGREGATE_BOARD, BOARD_WINDOWS, LOCKED_CALL, OPT_IN, PERSONAL_SCOREBOARD, PUBLIC_BOARD, type BoardWindow } from '../../product/duel/schemas.ts'
import { FREE, PAYER_HEADER, PAYER_IN_HEADER, callerPayer, env, notFound, paid } from './define.ts'
import type { RouteDef } from './types.ts'

const OPTIONAL_PAYER_HEADER = Type.Object({ 'x-svc-payer': Type.Optional(Address) })

export const DUEL_ROUTES: readonly RouteDef[] = [
  {
    id: 'calls.lock',
    method: 'POST',
    path: '/v1/calls',
    summary: 'Lock a personal call on an open clock (the duel)',
    description:
      "One call per payer per clock, before its horizon_end; the house's frozen probability is stored beside it and both are graded when the clock resolves (an unresolvable outcome voids the call). On a distribution question (S01) the call is about the house's chosen class: obtains = the chosen class is the realized one. Refusals (unknown decision, refusal decision, CLOCK_CLOSED, CALL_ALREADY_LOCKED) are answered before any payment: nothing is charged.",
    tags: ['duel'],
    pay: paid('decision.deep'),
    payer: PAYER_IN_HEADER,
    mcp: {
      name: 'svc_call',
      description:
        "Lock your own call (obtains or not, optionally with your probability) on an open decision clock before its horizon; at resolution it is graded beside the house's frozen probability. One call per payer per clock. For S01 (a distribution), obtains means the house's chosen class occurs. Paid at the decision price; refusals cost nothing.",
    },
    needs: ['duel'],
    request: {
      headers: PAYER_HEADER,
      body: Strict({ decision_id: Uuid, call: StringEnum(['obtains', 'not']), call_probability: Type.Optional(Probability) }),
    },
    response: env(LOCKED_CALL, 201),
    errors: ['DECISION_NOT_FOUND', 'CLOCK_CLOSED', 'CALL_ALREADY_LOCKED'],
    // Free refusals: checked before the payment challenge, so a caller never pays (or signs) for a refusal. Only those
    // about the clock: CALL_ALREADY_LOCKED waits for the proven payer (the handler refuses it, and nothing is charged).
    precheck: (ctx) => {
      const ok = ctx.need('duel').checkCall({ payer: null, decision_id: String(ctx.body.decision_id) })
      if (!ok) notFound('DECISION_NOT_FOUND', '/body/decision_id', ctx.body.decision_id)
    },
    handler: async (ctx) => {
      const r = await ctx.need('duel').lockCall(
        {
          payer: ctx.headers['x-svc-payer'] as string,
          decision_id: String(ctx.body.decision_id),
          call: ctx.body.call as 'obtains' | 'not',
          call_probability: typeof ctx.body.call_probability === 'number' ? ctx.body.call_probability : null,
        },
        ctx.payment!,
        ctx.unit!,
      )
      return r ? { data: r, status: 201 } : notFound('DECISION_NOT_FOUND', '/body/decision_id', ctx.body.decision_id)
    },
  },
  {
    id: 'calls.scoreboard.personal',
    method: 'GET',
    path: '/v1/calls',
    summary: "A payer's personal scoreboard: their calls graded against the house",
    description:
      'calls, graded, open and void counts; player and house accuracy (null for an empty record, never zero) and mean Brier on the same graded calls; the most recent calls with their grades. The payer comes from the query parameter payer or the x-svc-payer header.',
    tags: ['duel'],
    pay: FREE,
    payer: { header: 'x-svc-payer', field: 'query' },
    mcp: {
      name: 'svc_calls',
      description:
        "Read a payer's house-versus-you record: how many calls they locked, how many were graded, their accuracy and Brier next to the house's on the same clocks, and their recent calls with outcomes. Free. Pass payer (a Base address) or send the x-svc-payer header.",
    },
    needs: ['duel'],
    request: { headers: OPTIONAL_PAYER_HEADER, query: Open({ payer: Type.Optional(Address) }) },
    response: env(PERSONAL_SCOREBOARD),
    errors: [],
    handler: async (ctx) => ({ data: await ctx.need('duel').scoreboard(callerPayer(ctx, 'x-svc-payer', 'query')) }),
  },
  {
    id: 'calls.scoreboard.aggregate',
    method: 'GET',
    path: '/v1/calls/scoreboard',
    summary: 'The personal aggregate board: opted-in players with at least 10 graded calls, ranked by accuracy',
    description:
      "Identifiers and counts only (never balance, spend or payment fields), plus the asking payer's own standing (rank null until opted in with 10 graded calls). The payer comes from the query parameter payer or the x-svc-payer header.",
    tags: ['duel'],
    pay: FREE,
    needs: ['duel'],
    request: { headers: OPTIONAL_PAYER_HEADER, query: Open({ payer: Type.Optional(Address) }) },
    response: env(AGGREGATE_BOARD),
    errors: [],
    handler: (ctx) => ({ data: ctx.need('duel').aggregateBoard(callerPayer(ctx, 'x-svc-payer', 'query')) }),
  },
  {
    id: 'scoreboard.public',
    method: 'GET',
    path: '/v1/scoreboard',
    summary: 'The public opt-in board by abbreviated handle (window all, 30d or 7d)',
    description: 'One row per opted-in payer with at least 10 calls graded in the window: accuracy, calls graded, calls correct and a derived abbreviated handle, never an address. entries is [] when nobody qualifies.',
    tags: ['duel'],
    pay: FREE,
    needs: ['duel'],
    request: { query: Open({ window: Type.Optional(StringEnum(BOARD_WINDOWS, { default: 'all' })) }) },
    response: env(PUBLIC_BOARD),
    errors: [],
    handler: (ctx) => ({ data: ctx.need('duel').publicBoard((ctx.query.window ?? 'all') as BoardWindow) }),
  },
  {
    id: 'calls.opt_in',
    method: 'POST',
    path: '/v1/calls/opt-in',
    summary: 'Record consent to appear on the boards (default false)',
    description: 'An append-only consent record; the last one wins. The payer comes from the body field payer or the x-svc-payer header.',
    tags: ['duel'],
    pay: FREE,
    payer: { header: 'x-svc-payer', field: 'body' },
    needs: ['duel'],
    request: { headers: OPTIONAL_PAYER_HEADER, body: Strict({ payer: Type.Optional(Address), opt_in: Type.Boolean() }) },
    response: env(OPT_IN),
    errors: [],
    handler: async (ctx) => ({ data: await ctx.need('duel').optIn(callerPayer(ctx, 'x-svc-payer', 'body'), ctx.body.opt_in === true) }),
  },
]
