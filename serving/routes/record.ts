/**
 * The measured record's routes (spec, Platform and measured record): calibration reports, base-rate priors, the
 * intelligence snapshot with its ladder, the learning curve, the claim checker, the answer keys and the sealed policy ruleset. Transport
 * only: the figures come from the batch tables through record/MeasuredRecord.ts, the ladder object from the price
 * list's own builder (so it is identical to GET /v1/pricing's), the seal from models/policy.
 */
import { Hex64, Nullable, Open, QuestionId, StringEnum, Strict, Type } from '../../common/schema.ts'
import { ServiceError } from '../../common/ServiceError.ts'
import { INDEX_VERSION } from '../../models/verification/dii.ts'
import { buildLadder } from '../../product/billing/pricing.ts'
import { LADDER } from '../../product/billing/schemas.ts'
import { verifyReceipt, type Receipt } from '../../record/claimChecker.ts'
import { ANSWER_SIGNATURE_SCHEME, answerKeysOf } from '../../record/answerKeys/answerSignature.ts'
import { CURVE_WINDOWS, INDEX_VERSIONS, type CurveWindow } from '../../record/MeasuredRecord.ts'
import { activePolicy } from '../../models/policy/rulesets.ts'
import { POLICY_SEAL } from '../../engine/schemas.ts'
import { PRIOR_FLOOR, PRIORS_NOTE } from '../../record/MeasuredRecord.ts'
import { ANSWER_KEYS, CALIBRATION, CURVE, INTELLIGENCE_SNAPSHOT, PRIORS, VERIFY_RESULT } from '../../record/schemas.ts'
import { FREE, env } from './define.ts'
import { ladderMeasuresOf } from './platform.ts'
import type { RouteDef } from './types.ts'

/** The active sealed ruleset, computed once: its checksum is recomputable from the body (JCS + SHA-256). */
const POLICY_SEAL_BODY = activePolicy().seal()


export const RECORD_ROUTES: readonly RouteDef[] = [
  {
    id: 'calibration',
    method: 'GET',
    path: '/v1/calibration',
    summary: 'Calibration report: decile buckets of predicted against realized frequency, the scores of the claims, and a distribution question\'s per-class reliability',
    tags: ['measured-record'],
    pay: FREE,
    mcp: {
      name: 'svc_calibration',
      description:
        'How well the service\'s past probabilities matched what happened: predicted decile bands against realized frequency, for one question (and optionally one asset or wallet), with the Brier score, log loss and skill of those claims. A distribution question (S01) is scored by its whole distribution, with each class\'s bands in classes; its buckets grade the chosen class only. Bands below the sample floor report counts only. Free.',
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
  {
    id: 'intelligence',
    method: 'GET',
    path: '/v1/intelligence',
    summary: 'The latest intelligence snapshot (index, components, evidence, hash chain), chain_verified and the price ladder',
    tags: ['measured-record'],
    pay: FREE,
    mcp: {
      name: 'svc_get_intelligence',
      description:
        "The service's own track record in one object: the Decision Intelligence Index (null below 100 realized outcomes), Brier score, log loss, skill against the base rate, calibration error, how many decisions resolved, the evidence window, and the price ladder's rung and gates. Free. Use it to judge how far to trust the service's probabilities.",
    },
    needs: ['record'],
    request: {},
    response: env(Type.Object({ snapshot: Nullable(INTELLIGENCE_SNAPSHOT), chain_verified: Type.Boolean(), ladder: LADDER }, { additionalProperties: false })),
    errors: [],
    handler: async (ctx) => {
      const read = await ctx.need('record').intelligence()
      return { data: { snapshot: read.snapshot, chain_verified: read.chain_verified, ladder: buildLadder(await ladderMeasuresOf(ctx)) } }
    },
  },
  {
    id: 'intelligence.curve',
    method: 'GET',
    path: '/v1/intelligence/curve',
    summary: 'The learning curve: one point per snapshot of one index version, and the fit BS(n) = a·n^(−b) + c',
    tags: ['measured-record'],
    pay: FREE,
    needs: ['record'],
    request: {
      query: Open({
        window: Type.Optional(StringEnum(CURVE_WINDOWS, { description: 'all (default), or the points taken in the last 90d, 30d, 7d or 24h' })),
        from: Type.Optional(Type.String({ format: 'date-time', description: 'only points taken at or after this ISO-8601 instant' })),
        index_version: Type.Optional(StringEnum(INDEX_VERSIONS, { description: `the index version of the series (default ${INDEX_VERSION}); series never mix versions` })),
      }),
    },
    response: env(CURVE),
    errors: ['STALE_DATA'],
    handler: async (ctx) => {
      const q = ctx.query
      const curve = await ctx.need('record').curve({
        window: (typeof q.window === 'string' ? q.window : 'all') as CurveWindow,
        from: typeof q.from === 'string' ? q.from : null,
        index_version: typeof q.index_version === 'string' ? q.index_version : INDEX_VERSION,
      })
      // Spec, Errors: "STALE_DATA … also a restated intelligence curve refuses loudly".
      if (!curve.chain_verified) {
        throw new ServiceError('STALE_DATA', { message: 'the snapshot chain does not verify: the curve would restate published history', detail: { reason: 'CURVE_RESTATED' } })
      }
      const { chain_verified: _verified, ...data } = curve
      return { data }
    },
  },
  {
    id: 'verify',
    method: 'POST',
    path: '/v1/verify',
    summary: 'Claim checker: recomputes a receipt\'s id (JCS SHA-256), checks its answer signature and compares it with the ledger',
    tags: ['measured-record'],
    pay: FREE,
    mcp: {
      name: 'svc_verify',
      description:
        'Check a decision receipt you hold: { poj_id, body, signature }, where body is the decision record as served in data and signature its meta.signatures entry. Recomputes the id from the body, recovers the signer of the signature over the whole body and requires a published answer key inside its window, and compares the body with the ledger\'s record. valid is true only when all hold, so any changed field (probability, decision, a nested value) or an invented record gives valid false, with the recomputed id, the recovered signer and the ledger\'s differing values beside the claimed ones. Free.',
    },
    request: {
      body: Strict({
        poj_id: Type.String({ pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$', description: 'the decision_id the receipt claims' }),
        body: Type.Object(
          {
            question_id: QuestionId,
            asset: Type.String({ minLength: 1, maxLength: 64 }),
            subject: Nullable(Type.String({ minLength: 1, maxLength: 128 })),
            input_hash: Nullable(Hex64),
            policy_version: Type.String({ minLength: 1, maxLength: 64 }),
          },
          { description: 'the decision record exactly as served in data (GET /v1/decisions/{decision_id}, POST /v1/decisions, ...): every field is covered by the signature' },
        ),
        signature: Type.Optional(
          Type.Object(
            {
              decision_id: Type.Optional(Type.String()),
              scheme: Type.Optional(Type.Literal(ANSWER_SIGNATURE_SCHEME)),
              signer: Type.String({ pattern: '^0x[0-9a-fA-F]{40}$' }),
              signature: Type.String({ pattern: '^0x[0-9a-fA-F]{130}$' }),
              signed_at: Type.String({ format: 'date-time' }),
            },
            { additionalProperties: false, description: 'the meta.signatures entry served beside the record (without it the receipt cannot be valid)' },
          ),
        ),
      }),
    },
    response: env(VERIFY_RESULT),
    errors: [],
    handler: async (ctx) => {
      const receipt = ctx.body as unknown as Receipt
      const ledger = ctx.services.ledger
      const recorded = ledger ? ((await ledger.getDecision(receipt.poj_id.toLowerCase()))?.record ?? null) : undefined
      return { data: await verifyReceipt(receipt, { keys: ctx.services.answerKeys?.keys ?? [], recorded }) }
    },
  },
  {
    id: 'answer_keys',
    method: 'GET',
    path: '/v1/answer-keys',
    summary: 'The answer keys that sign served decision records: each address with its validity window, and what is signed',
    tags: ['measured-record'],
    pay: FREE,
    request: {},
    response: env(ANSWER_KEYS),
    errors: [],
    handler: (ctx) => ({ data: answerKeysOf(ctx.services.answerKeys) }),
  },
]
