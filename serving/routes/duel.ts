/** Duel routes (spec, Decisions, ledger and duel: POST /v1/calls). Transport only; the duel domain is product/duel/. */
import { Probability, Strict, StringEnum, Type, Uuid } from '../../common/schema.ts'
import { ANY_OBJECT, PAYER_HEADER, env, notFound, paid } from './define.ts'
import type { RouteDef } from './types.ts'


export const DUEL_ROUTES: readonly RouteDef[] = [
  {
    id: 'calls.lock',
    method: 'POST',
    path: '/v1/calls',
    summary: 'Lock a personal call on an open clock (the duel)',
    tags: ['duel'],
    pay: paid('decision.deep'),
    mcp: {
      name: 'svc_call',
      description:
        "Lock your own call (obtains or not, optionally with your probability) on an open decision clock before its horizon; at resolution it is graded beside the house's frozen probability. One call per payer per clock. Paid at the decision price.",
    },
    needs: ['duel'],
    request: {
      headers: PAYER_HEADER,
      body: Strict({ decision_id: Uuid, call: StringEnum(['obtains', 'not']), call_probability: Type.Optional(Probability) }),
    },
    response: env(ANY_OBJECT),
    errors: ['DECISION_NOT_FOUND', 'CLOCK_CLOSED', 'CALL_ALREADY_LOCKED'],
    handler: async (ctx) => {
      const r = await ctx.need('duel').lockCall(
        {
          payer: ctx.headers['x-svc-payer'] as string,
          decision_id: String(ctx.body.decision_id),
          call: ctx.body.call as 'obtains' | 'not',
          call_probability: typeof ctx.body.call_probability === 'number' ? ctx.body.call_probability : null,
        },
        ctx.payment!,
      )
      return r ? { data: r, status: 201 } : notFound('DECISION_NOT_FOUND', '/body/decision_id', ctx.body.decision_id)
    },
  },
]
