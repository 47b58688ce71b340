/**
 * Identities and hashes of ledger rows.
 *
 * Spec, Versioning 4: "Identical inputs under the same policy version yield the same recorded decision." So
 * decision_id is a name-based UUID of (question_id, asset, subject, input_hash, policy_version): the first 16 bytes of
 * SHA-256 over the canonical JSON (RFC 8785) of ["svc.decision.v1", question_id, asset, subject, input_hash,
 * policy_version], with the RFC 9562 version set to 8 (custom; the SHA-256 name-based form of RFC 9562 B.2, since v5
 * is SHA-1) and the variant to 10.
 *
 * input_hash = SHA-256 of the canonical JSON of the journaled FeatureSnapshot (the QuestionModel contract).
 * state_hash = SHA-256 of the canonical JSON of { model_id, jev_version, fitted_version, policy_version,
 * policy_checksum }: what, besides the inputs, decides the answer (the fitted parameters are named by their
 * content-hashed version, engine/FitStore.ts).
 */
import { createHash } from 'node:crypto'
import { canonicalJson, isWellFormed } from '../common/jcs.ts'
import { jcsSha256 } from '../common/hash.ts'

export const DECISION_ID_DOMAIN = 'svc.decision.v1'

export interface DecisionIdentity {
  question_id: string
  asset: string
  subject: string | null
  input_hash: string
  policy_version: string
}

export function decisionIdOf(p: DecisionIdentity): string {
  // An array of strings and null has one JSON text, and JSON.stringify writes it (RFC 8785 §3.2.2.2: strings are
  // escaped as JSON.stringify does); canonicalJson only adds the well-formedness check for the caller-given parts.
  const parts = [DECISION_ID_DOMAIN, p.question_id, p.asset, p.subject, p.input_hash, p.policy_version]
  const name = parts.every((x) => x === null || isWellFormed(x)) ? JSON.stringify(parts) : canonicalJson(parts)
  const b = createHash('sha256').update(name, 'utf8').digest().subarray(0, 16)
  b[6] = (b[6]! & 0x0f) | 0x80
  b[8] = (b[8]! & 0x3f) | 0x80
  const h = b.toString('hex')
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
}

export interface StateParts {
  model_id: string
  jev_version: string
  fitted_version: string | null
  policy_version: string
  policy_checksum: string
  /** The release the fit came from; absent (or null) leaves the hash as it was before releases were served. */
  release_version?: string | null
}

/** The state hash of one (model, fit, ruleset): a handful of them per deployment, asked for on every decision. */
const stateHashes = new Map<string, string>()

export function stateHashOf(p: StateParts): string {
  const key = `${p.model_id}\n${p.jev_version}\n${p.fitted_version}\n${p.policy_version}\n${p.policy_checksum}\n${p.release_version ?? ''}`
  let h = stateHashes.get(key)
  if (h === undefined) {
    h = computeStateHash(p)
    if (stateHashes.size > 10_000) stateHashes.clear() // account fits are per subject: bound the memo
    stateHashes.set(key, h)
  }
  return h
}

function computeStateHash(p: StateParts): string {
  return jcsSha256({
    model_id: p.model_id,
    jev_version: p.jev_version,
    fitted_version: p.fitted_version,
    policy_version: p.policy_version,
    policy_checksum: p.policy_checksum,
    ...(p.release_version ? { release_version: p.release_version } : {}),
  })
}

/** The journal of a snapshot and its input_hash. */
export function journalOf(snapshot: unknown): { journal: string; input_hash: string } {
  const journal = canonicalJson(snapshot)
  return { journal, input_hash: createHash('sha256').update(journal, 'utf8').digest('hex') }
}

/** Re-verifies a journal: true when the JCS SHA-256 of its parsed value is input_hash; null when it does not parse. */
export function journalMatches(journal: string, inputHash: string): boolean | null {
  let parsed: unknown
  try {
    parsed = JSON.parse(journal)
  } catch {
    return null
  }
  try {
    return jcsSha256(parsed) === inputHash
  } catch {
    return null
  }
}
