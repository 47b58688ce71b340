/**
 * Values on the `outcomes` topic (key = decision_id): what the resolution engine re-derived once a clock's horizon
 * (plus the late-data grace) had passed in event time. Canonical JSON, like decisions.
 *
 * Spec, Resolution record: { decision_id, outcome: obtains | not | unresolvable, resolved_at, statistic }.
 * "Unresolvable is a legal outcome and is never coerced into not." The row adds the clock's identity (question_id,
 * asset, subject, horizon_end), the question's full measured statistic (statistic_detail; `statistic` is its primary
 * number), the realized class of choice questions and the resolver's reason for unresolvable outcomes.
 */
import { Ajv } from 'ajv'
import { canonicalJson } from '../../common/jcs.ts'
import { firstError } from './decisionRecord.ts'

export const OUTCOME_RECORD_VERSION = 1
export const OUTCOMES = ['obtains', 'not', 'unresolvable'] as const
export type LedgerOutcomeKind = (typeof OUTCOMES)[number]

export interface LedgerOutcome {
  v: 1
  decision_id: string
  question_id: string
  asset: string
  subject: string | null
  outcome: LedgerOutcomeKind
  /** Event time at which the resolution engine wrote it. */
  resolved_at: string
  horizon_end: string
  statistic: number | null
  statistic_detail: Record<string, number | string | null> | null
  realized_choice: string | null
  reason: string | null
}

const iso = { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$' } as const

export const OUTCOME_RECORD_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['v', 'decision_id', 'question_id', 'asset', 'subject', 'outcome', 'resolved_at', 'horizon_end', 'statistic', 'statistic_detail', 'realized_choice', 'reason'],
  properties: {
    v: { const: OUTCOME_RECORD_VERSION },
    decision_id: { type: 'string', pattern: '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' },
    question_id: { type: 'string', pattern: '^S[0-9]{2}_[a-z0-9_]+$' },
    asset: { type: 'string', minLength: 1 },
    subject: { type: ['string', 'null'] },
    outcome: { enum: [...OUTCOMES] },
    resolved_at: iso,
    horizon_end: iso,
    statistic: { type: ['number', 'null'] },
    statistic_detail: { type: ['object', 'null'], additionalProperties: { type: ['number', 'string', 'null'] } },
    realized_choice: { type: ['string', 'null'] },
    reason: { type: ['string', 'null'] },
  },
} as const

const ajv = new Ajv({ allErrors: false, strict: false })
const validate = ajv.compile(OUTCOME_RECORD_SCHEMA)

export function validateOutcome(value: unknown): LedgerOutcome {
  if (!validate(value)) throw firstError(validate.errors)
  return value as unknown as LedgerOutcome
}

export function encodeOutcome(o: LedgerOutcome): Buffer {
  return Buffer.from(canonicalJson(validateOutcome(o)), 'utf8')
}

export function decodeOutcome(value: Buffer | string): LedgerOutcome {
  return validateOutcome(JSON.parse(typeof value === 'string' ? value : value.toString('utf8')))
}
