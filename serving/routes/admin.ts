/**
 * Operator funnel route (spec, Operator: GET /v1/admin/economy-funnel, header x-admin-key, query limit). Transport
 * only; the funnel is product/funnel/.
 *
 * An operator route (left out of OpenAPI, llms.txt, ai.txt, the agent card and the MCP catalog: derive.ts isPublic)
 * that exists only where the funnel is wired (onlyWhenWired), and the composition root wires it only with an admin
 * key: "the route does not exist when no admin key is configured". A missing or wrong key is 403 OPS_FORBIDDEN with
 * detail.reason ADMIN_KEY_REJECTED; the header is optional in the schema so a missing key is that refusal, not a 400.
 */
import { Nullable, Open, Strict, Type } from '../../common/schema.ts'
import { FUNNEL_ACTIVATION_SCHEMA, FUNNEL_STEP_SCHEMA } from '../../pipeline/records/funnelRecord.ts'
import { ADMIN_KEY_HEADER, FUNNEL_LIMIT_DEFAULT, FUNNEL_LIMIT_MAX } from '../../product/funnel/FunnelService.ts'
import { FREE, env } from './define.ts'
import type { RouteDef } from './types.ts'

const FUNNEL_VIEW = {
  at: Type.String({ format: 'date-time' }),
  window_calls: Type.Integer({ minimum: 0 }),
  xp_by_kind: Nullable(Type.Record(Type.String(), Type.Integer({ minimum: 0 }))),
  steps: Type.Array(FUNNEL_STEP_SCHEMA),
}

/** Spec (Operator funnel): { funnel, activation, trend (newest first), window }. */
export const FUNNEL_REPORT = Strict({
  funnel: Nullable(Strict(FUNNEL_VIEW)),
  activation: FUNNEL_ACTIVATION_SCHEMA,
  trend: Type.Array(Strict({ ...FUNNEL_VIEW, activation: FUNNEL_ACTIVATION_SCHEMA })),
  window: Strict({
    limit: Type.Integer({ minimum: 1 }),
    snapshots: Type.Integer({ minimum: 0 }),
    newest_at: Nullable(Type.String({ format: 'date-time' })),
    oldest_at: Nullable(Type.String({ format: 'date-time' })),
  }),
})

export const ADMIN_ROUTES: readonly RouteDef[] = [
  {
    id: 'admin.funnel',
    method: 'GET',
    path: '/v1/admin/economy-funnel',
    summary: 'Operator: the economy funnel (steps with counts or why not, activation, trend of snapshots)',
    tags: ['ops'],
    pay: FREE,
    operator: true,
    onlyWhenWired: 'funnel',
    needs: ['funnel'],
    request: {
      headers: Open({ [ADMIN_KEY_HEADER]: Type.Optional(Type.String({ maxLength: 512 })) }),
      query: Type.Object({
        limit: Type.Optional(Type.Integer({ minimum: 1, maximum: FUNNEL_LIMIT_MAX, default: FUNNEL_LIMIT_DEFAULT, description: 'trend snapshots, newest first' })),
      }),
    },
    response: env(FUNNEL_REPORT),
    errors: ['OPS_FORBIDDEN'],
    handler: async (ctx) => {
      const funnel = ctx.need('funnel')
      funnel.requireAdmin(ctx.headers[ADMIN_KEY_HEADER])
      const limit = typeof ctx.query.limit === 'number' ? ctx.query.limit : FUNNEL_LIMIT_DEFAULT
      return { data: await funnel.report(limit), headers: { 'cache-control': 'no-store' } }
    },
  },
]
