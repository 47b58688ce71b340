/**
 * The measured record's routes (spec, Platform and measured record): calibration reports, base-rate priors and the
 * sealed policy ruleset. Transport only: the figures come from record/MeasuredRecord.ts, the seal from models/policy.
 */
import { Open, QuestionId, Type } from '../../common/schema.ts'
import { activePolicy } from '../../models/policy/rulesets.ts'
import { POLICY_SEAL } from '../../engine/schemas.ts'
import { PRIOR_FLOOR, PRIORS_NOTE } from '../../record/MeasuredRecord.ts'
import { CALIBRATION, PRIORS } from '../../record/schemas.ts'
import { FREE, env } from './define.ts'
import type { RouteDef } from './types.ts'

/** The active sealed ruleset, computed once: its checksum is recomputable from the body (JCS + SHA-256). */
const POLICY_SEAL_BODY = activePolicy().seal()


export const RECORD_ROUTES: readonly RouteDef[] = [
  {
    id: 'calibration',
    method: 'GET',
    path: '/v1/calibration',
    summary: 'Calibration report: decile buckets of predicted against realized frequency',
    tags: ['measured-record'],
    pay: FREE,
    mcp: {
      name: 'svc_calibration',
      description:
        'How well the service\'s past probabilities matched what happened: predicted decile bands against realized frequency, for one question (and optionally one asset or wallet). Bands below the sample floor report counts only. Free.',
    },
    needs: ['record'],
    request: { query: Open({ question_id: Type.Optional(QuestionId), subject: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })) }) },
    response: env(CALIBRATION),
    errors: [],
    handler: async (ctx) => ({
      data: await ctx.need('record').calibration({
        question_id: typeof ctx.query.question_id === 'string' ? ctx.query.question_id : null,
        subject: typeof ctx.query.subject === 'string' ? ctx.query.subject : null,
      }),
    }),
  },
  {
    id: 'priors',
    method: 'GET',
    path: '/v1/priors',
    summary: 'Per-question base rates (pooled rate, Wilson interval, n, successes, verdict; label histogram for choice questions)',
    tags: ['measured-record'],
    pay: FREE,
    needs: ['record'],
    request: {},
    response: env(PRIORS),
    errors: [],
    handler: async (ctx) => ({ data: { priors: await ctx.need('record').priors(), n_floor: PRIOR_FLOOR, note: PRIORS_NOTE } }),
  },
  {
    id: 'policy.seal',
    method: 'GET',
    path: '/v1/policy/seal',
    summary: 'The sealed policy ruleset in force, with its JCS SHA-256 checksum (recomputable from the body)',
    tags: ['measured-record'],
    pay: FREE,
    request: {},
    response: env(POLICY_SEAL),
    errors: [],
    handler: () => ({ data: POLICY_SEAL_BODY }),
  },
]
