/**
 * The public track-record page (GET /record): HTML for people, from the same reads the JSON routes of the measured
 * record make (RecordReads, ReleaseReads), laid out by serving/docs/trackRecordPage.ts. Free, like every read of the
 * record. Without a release store wired the page says "No release yet" rather than refusing: releases are one section
 * of the page, the record is the page.
 */
import { INDEX_VERSION } from '../../models/verification/dii.ts'
import { renderTrackRecordPage, TRACK_RECORD_CONTENT_TYPE, TRACK_RECORD_CSP, type TrackRecordFigures } from '../docs/trackRecordPage.ts'
import { dataLabelOf } from '../../product/platform/dataLabel.ts'
import { FREE } from './define.ts'
import { RECORD_ROUTES } from './record.ts'
import { RELEASE_ROUTES } from './releases.ts'
import type { RouteDef } from './types.ts'

/** A JSON route's path by id, so the page links what the registry serves and names no path of its own. */
function pathOf(id: string): string {
  const r = [...RECORD_ROUTES, ...RELEASE_ROUTES].find((x) => x.id === id)
  if (!r) throw new Error(`the track-record page links route '${id}', which is not in the registry`)
  return r.path
}

const API: TrackRecordFigures['api'] = {
  intelligence: pathOf('intelligence'),
  curve: pathOf('intelligence.curve'),
  calibration: pathOf('calibration'),
  priors: pathOf('priors'),
  releases: pathOf('intelligence.releases'),
}

export const TRACK_RECORD_ROUTES: readonly RouteDef[] = [
  {
    id: 'record.page',
    method: 'GET',
    path: '/record',
    summary: 'The public track record as an HTML page: index, learning curve, reliability diagrams per question, releases',
    description:
      'Server-rendered HTML with inline SVG charts and no script, built from the same reads as GET /v1/intelligence, /v1/intelligence/curve, /v1/calibration, /v1/priors and /v1/intelligence/releases; every figure also sits in a data-* attribute as JSON.',
    tags: ['measured-record'],
    pay: FREE,
    needs: ['record'],
    request: {},
    response: { kind: 'text', contentType: TRACK_RECORD_CONTENT_TYPE },
    errors: [],
    handler: async (ctx) => {
      const record = ctx.need('record')
      const [intel, curve, priors] = await Promise.all([
        record.intelligence(),
        record.curve({ window: 'all', from: null, index_version: INDEX_VERSION }),
        record.priors(),
      ])
      const questions = await Promise.all(
        priors.map(async (p) => ({
          question_id: p.question_id,
          label: p.label,
          answer: p.answer,
          prior: p.prior,
          reason: p.reason,
          calibration: await record.calibration({ question_id: p.question_id, subject: null }),
        })),
      )
      const releases = ctx.services.releases ? await ctx.services.releases.list() : null
      const { chain_verified: _curveChain, ...curveData } = curve
      // What the data is, from the object every answer's x-svc-data-time comes from, as of this request.
      const dataTime = ctx.services.dataTime
      const time = dataTime?.status() ?? null
      const body = renderTrackRecordPage({
        generated_at: new Date(ctx.now).toISOString(),
        snapshot: intel.snapshot,
        chain_verified: intel.chain_verified,
        curve: curveData,
        questions,
        releases,
        data: time && dataTime ? { time, label: dataLabelOf(time, dataTime.venue()), header: dataTime.header() } : null,
        api: API,
      })
      return { raw: { body, contentType: TRACK_RECORD_CONTENT_TYPE, headers: { 'content-security-policy': TRACK_RECORD_CSP, 'x-content-type-options': 'nosniff' } } }
    },
  },
]
