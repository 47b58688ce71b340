/**
 * Releases (spec, Platform and measured record): the release feed and each release's proof bundle. Free reads of the
 * sealed rows (record/releases/ReleaseStore.ts); statuses are derived at read time.
 */
import { ServiceError } from '../../common/ServiceError.ts'
import { RELEASE_DETAIL, RELEASE_LIST, RELEASE_PARAMS, RELEASES_QUERY, type ReleaseStatus } from '../../record/releases/schemas.ts'
import { FREE, env } from './define.ts'
import type { RouteDef } from './types.ts'

export const RELEASE_ROUTES: readonly RouteDef[] = [
  {
    id: 'intelligence.releases',
    method: 'GET',
    path: '/v1/intelligence/releases',
    summary: 'Sealed model releases with their derived status, holdout evaluation and promotion gates',
    description:
      'Each release is a sealed, checksummed body of fitted parameters; its evaluation scores it against its incumbent on a holdout after its fit window, and four sealed gate rows (evidence, improvement, no_regression, reproducible) decide whether it may be activated. Status (candidate, active, superseded, rejected) is derived from the rows at read time.',
    tags: ['measured-record'],
    pay: FREE,
    mcp: {
      name: 'svc_list_releases',
      description:
        'The sealed model releases behind the answers, each with its status (candidate, active, superseded, rejected), holdout evaluation against its incumbent and promotion gates. Filter with status. Free; use it to judge which model version produced a decision.',
    },
    needs: ['releases'],
    request: { query: RELEASES_QUERY },
    response: env(RELEASE_LIST),
    errors: [],
    handler: async (ctx) => ({
      data: { releases: await ctx.need('releases').list({ status: typeof ctx.query.status === 'string' ? (ctx.query.status as ReleaseStatus) : null }) },
    }),
  },
  {
    id: 'intelligence.release',
    method: 'GET',
    path: '/v1/intelligence/releases/{version}',
    summary: 'One release\'s proof bundle: feed item, the sealed body verbatim with its checksum, per-family details',
    tags: ['measured-record'],
    pay: FREE,
    needs: ['releases'],
    request: { params: RELEASE_PARAMS },
    response: env(RELEASE_DETAIL),
    errors: ['RELEASE_NOT_FOUND'],
    handler: async (ctx) => {
      const version = String(ctx.params.version)
      const detail = await ctx.need('releases').detail(version)
      if (!detail) throw new ServiceError('RELEASE_NOT_FOUND', { detail: { field: '/params/version', value: version } })
      return { data: detail }
    },
  },
]
