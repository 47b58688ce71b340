/** Delivery routes (spec, POST /v1/hooks). Transport only; the delivery domain is product/delivery/. */
import { HttpsUrl, Strict, Uuid } from '../../common/schema.ts'
import { ANY_OBJECT, env, notFound, paid } from './define.ts'
import type { RouteDef } from './types.ts'

export const DELIVERY_ROUTES: readonly RouteDef[] = [
  {
    id: 'hooks.create',
    method: 'POST',
    path: '/v1/hooks',
    summary: 'Arm a signed resolution hook for one decision',
    tags: ['delivery'],
    pay: paid('decision.deep'),
    needs: ['delivery'],
    request: { body: Strict({ decision_id: Uuid, url: HttpsUrl }) },
    response: env(ANY_OBJECT),
    errors: ['DECISION_NOT_FOUND', 'HOOK_CLOCK_TERMINAL', 'UNSAFE_URL'],
    handler: async (ctx) => {
      const r = await ctx.need('delivery').armHook({ decision_id: String(ctx.body.decision_id), url: String(ctx.body.url) }, ctx.payment!)
      return r ? { data: r, status: 201 } : notFound('DECISION_NOT_FOUND', '/body/decision_id', ctx.body.decision_id)
    },
  },
]
