/**
 * Operations routes: GET /metrics, the Prometheus text exposition (serving/metrics/ServiceMetrics.ts). Transport only.
 *
 * An operator route: left out of OpenAPI, llms.txt, ai.txt, the agent card and the MCP catalog (derive.ts isPublic),
 * and gated by the operator token like the other operator routes (docs/decisions.md): it shows paid volume and
 * revenue by rail. Prometheus sends a token natively as `Authorization: Bearer <token>` (scrape config
 * `authorization.credentials_file`), so that form is accepted beside x-svc-ops.
 */
import { Open, Type } from '../../common/schema.ts'
import { FREE } from './define.ts'
import type { HandlerContext, RouteDef } from './types.ts'

/** prom-client's Registry.PROMETHEUS_CONTENT_TYPE (the registry answers with its own; this one documents the route). */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8'

const BEARER = /^Bearer\s+(\S+)\s*$/i

/** The operator token a scrape carries: x-svc-ops, else an Authorization bearer token. */
function opsTokenOf(ctx: HandlerContext): string | undefined {
  const ops = ctx.headers['x-svc-ops']
  if (ops !== undefined) return ops
  const auth = ctx.headers.authorization
  return auth === undefined ? undefined : (BEARER.exec(auth)?.[1] ?? '')
}

export const OPS_ROUTES: RouteDef[] = [
  {
    id: 'ops.metrics',
    method: 'GET',
    path: '/metrics',
    summary: 'Operator: Prometheus metrics (requests and latency by route, paid calls by rail, consumer lag, decisions, resolutions, process)',
    tags: ['ops'],
    pay: FREE,
    operator: true,
    unlimited: true,
    needs: ['metrics', 'billing'],
    request: {
      headers: Open({
        'x-svc-ops': Type.Optional(Type.String({ maxLength: 512 })),
        authorization: Type.Optional(Type.String({ maxLength: 600 })),
      }),
    },
    response: { kind: 'text', contentType: PROMETHEUS_CONTENT_TYPE },
    errors: ['OPS_FORBIDDEN', 'OPS_UNSET'],
    handler: async (ctx) => {
      ctx.need('billing').requireOperator(opsTokenOf(ctx))
      const metrics = ctx.need('metrics')
      return { raw: { body: await metrics.render(), contentType: metrics.contentType, headers: { 'cache-control': 'no-store' } } }
    },
  },
]
