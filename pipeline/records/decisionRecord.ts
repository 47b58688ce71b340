/**
 * Values on the `decisions` topic: one append-only ledger row per decision, as canonical JSON (RFC 8785), so one
 * record always has the same bytes whichever process or log carried it.
 *
 * Spec, What the service does 2: "Decisions are kept on an append-only ledger. A recorded row is never altered."
 * Decision record (public): decision_id, question_id, event, horizon, conditions, probability, confidence, decision,
 * action, input_hash, state_hash, policy_version, jev_version, choice, payment_id. The spec counts sixteen fields and
 * names fifteen; the ledger row adds asset, subject, created_at and horizon_end (docs/decisions.md) plus what replay
 * and lineage need: the input journal (the exact FeatureSnapshot, canonical JSON), the parts state_hash is computed
 * from (model_id, fitted_version, policy_checksum), matched_rules, refusal_reason and payment_rail.
 *
 * `conditions` is the machine-readable object the resolver re-derives the event from; the public record renders it
 * as a list of strings (engine/EngineServices.ts publicRecord).
 *
 * Key on the topic: question_id|asset|subject (decisionKey), so one clock's decisions keep their order.
 */
import { Ajv, type ErrorObject } from 'ajv'
import { canonicalJson } from '../../common/jcs.ts'
import { LedgerRecordError } from './LedgerRecordError.ts'

export const DECISION_RECORD_VERSION = 1

export interface LedgerChoice {
  /** The chosen (modal) class. */
  choice_id: string
  distribution: Record<string, number>
}

export type PaymentRail = 'x402' | 'credits' | 'none'

export interface LedgerDecision {
  v: 1
  decision_id: string
  question_id: string
  asset: string
  /** Subject wallet of account-scoped questions; null for market questions. */
  subject: string | null
  event: string
  horizon: string
  /** created_at + horizon, ISO-8601 UTC (ms). */
  horizon_end: string
  /** Event time of the snapshot the decision was made from (never the wall clock of the engine). */
  created_at: string
  conditions: Record<string, unknown>
  probability: number
  confidence: number
  decision: string
  action: string
  input_hash: string
  state_hash: string
  policy_version: string
  jev_version: string
  choice: LedgerChoice | null
  payment_id: string | null
  payment_rail: PaymentRail
  matched_rules: string[]
  /** The model's refusal reason (e.g. 'input_stale:bars'), null for claims. */
  refusal_reason: string | null
  /** state_hash parts (engine/identity.ts). */
  model_id: string
  fitted_version: string | null
  policy_checksum: string
  /** The FeatureSnapshot the decision was evaluated from, as canonical JSON; null only when lost. */
  journal: string | null
}

const hex64 = { type: 'string', pattern: '^[0-9a-f]{64}$' } as const
const iso = { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$' } as const
const nullableString = { type: ['string', 'null'] } as const

export const DECISION_RECORD_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: [
    'v', 'decision_id', 'question_id', 'asset', 'subject', 'event', 'horizon', 'horizon_end', 'created_at', 'conditions',
    'probability', 'confidence', 'decision', 'action', 'input_hash', 'state_hash', 'policy_version', 'jev_version', 'choice',
    'payment_id', 'payment_rail', 'matched_rules', 'refusal_reason', 'model_id', 'fitted_version', 'policy_checksum', 'journal',
  ],
  properties: {
    v: { const: DECISION_RECORD_VERSION },
    decision_id: { type: 'string', pattern: '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' },
    question_id: { type: 'string', pattern: '^S[0-9]{2}_[a-z0-9_]+$' },
    asset: { type: 'string', minLength: 1 },
    subject: nullableString,
    event: { type: 'string' },
    horizon: { type: 'string', pattern: '^[0-9]+m$' },
    horizon_end: iso,
    created_at: iso,
    conditions: { type: 'object' },
    probability: { type: 'number', minimum: 0, maximum: 1 },
    confidence: { type: 'number', minimum: 0, maximum: 1 },
    decision: { type: 'string', minLength: 1 },
    action: { type: 'string', minLength: 1 },
    input_hash: hex64,
    state_hash: hex64,
    policy_version: { type: 'string', minLength: 1 },
    jev_version: { type: 'string', minLength: 1 },
    choice: {
      oneOf: [
        { type: 'null' },
        {
          type: 'object',
          additionalProperties: false,
          required: ['choice_id', 'distribution'],
          properties: { choice_id: { type: 'string' }, distribution: { type: 'object', additionalProperties: { type: 'number' } } },
        },
      ],
    },
    payment_id: nullableString,
    payment_rail: { enum: ['x402', 'credits', 'none'] },
    matched_rules: { type: 'array', items: { type: 'string' } },
    refusal_reason: nullableString,
    model_id: { type: 'string', minLength: 1 },
    fitted_version: nullableString,
    policy_checksum: hex64,
    journal: nullableString,
  },
} as const

const ajv = new Ajv({ allErrors: false, strict: false })
const validate = ajv.compile(DECISION_RECORD_SCHEMA)

export function firstError(errors: ErrorObject[] | null | undefined): LedgerRecordError {
  const e = errors?.[0]
  if (!e) return new LedgerRecordError('', 'is invalid')
  const extra =
    e.keyword === 'required' ? `/${String(e.params.missingProperty)}` : e.keyword === 'additionalProperties' ? `/${String(e.params.additionalProperty)}` : ''
  return new LedgerRecordError(`${e.instancePath}${extra}`, e.keyword === 'additionalProperties' ? 'is not a record field' : e.message ?? 'is invalid')
}

/** Throws LedgerRecordError naming the field path. */
export function validateDecision(value: unknown): LedgerDecision {
  if (!validate(value)) throw firstError(validate.errors)
  return value as unknown as LedgerDecision
}

/** The topic key: one clock (question, asset, subject) per key, so its decisions keep their order. */
export function decisionKey(d: Pick<LedgerDecision, 'question_id' | 'asset' | 'subject'>): string {
  return `${d.question_id}|${d.asset}|${d.subject ?? ''}`
}

export function encodeDecision(d: LedgerDecision): Buffer {
  return Buffer.from(canonicalJson(validateDecision(d)), 'utf8')
}

export function decodeDecision(value: Buffer | string): LedgerDecision {
  return validateDecision(JSON.parse(typeof value === 'string' ? value : value.toString('utf8')))
}
