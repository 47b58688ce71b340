/**
 * Replay and state verification: a recorded decision re-derived from its journaled inputs, the fit it named and a
 * sealed ruleset. No clock, no network: the journal, the fit store and the sealed ruleset are all it reads.
 *
 * Spec, POST /v1/decisions/{decision_id}/replay: "re-verifies journaled inputs against the row's input_hash;
 * unverifiable inputs: 409 REPLAY_INPUT_LOST"; Versioning 3: "a bad version pin is a 400 VALIDATION".
 */
import type { FeatureSnapshot } from '../pipeline/features/FeatureSnapshot.ts'
import type { LedgerDecision } from '../pipeline/records/decisionRecord.ts'
import type { FittedParams, QuestionModel } from '../models/QuestionModel.ts'
import type { Policy } from '../models/policy/Policy.ts'
import { policyByVersion } from '../models/policy/rulesets.ts'
import { QUESTIONS } from '../models/questions/index.ts'
import { EngineError } from './EngineError.ts'
import type { FitStore } from './FitStore.ts'
import { journalMatches, stateHashOf } from './identity.ts'
import type { LedgerIndex } from './LedgerIndex.ts'
import type { ReplayResult, Verified } from './schemas.ts'

export class Replayer {
  private readonly questions: Map<string, QuestionModel>

  constructor(
    private readonly index: LedgerIndex,
    private readonly fits: FitStore,
    questions: readonly QuestionModel[] = QUESTIONS,
  ) {
    this.questions = new Map(questions.map((q) => [q.id, q]))
  }

  /**
   * Replay (spec: "re-verifies journaled inputs against the row's input_hash; unverifiable inputs: 409
   * REPLAY_INPUT_LOST"; "a bad version pin is a 400 VALIDATION"). No clock, no network: the journal, the fit store
   * and the sealed ruleset are all it reads.
   */
  replay(decisionId: string, options: { ruleset_version: string | null }): ReplayResult | null {
    const d = this.index.decision(decisionId)
    if (!d) return null
    let policy: Policy | null
    if (options.ruleset_version !== null) {
      policy = policyByVersion(options.ruleset_version)
      if (!policy) throw new EngineError('VALIDATION', `unknown ruleset_version '${options.ruleset_version}'`, { reason: 'REQUEST_VALIDATION_FAILED', field: 'ruleset_version' })
    } else {
      policy = policyByVersion(d.policy_version)
      if (!policy) throw new EngineError('REPLAY_INPUT_LOST', `the recorded ruleset ${d.policy_version} is not known to this build`, { reason: 'ruleset_unknown' })
    }
    if (d.journal === null) throw new EngineError('REPLAY_INPUT_LOST', `decision ${decisionId} has no journaled inputs`, { reason: 'journal_missing' })
    if (journalMatches(d.journal, d.input_hash) !== true) {
      throw new EngineError('REPLAY_INPUT_LOST', `the journaled inputs of ${decisionId} do not hash to its input_hash`, { reason: 'journal_hash_mismatch' })
    }
    const question = this.questions.get(d.question_id)
    if (!question) throw new EngineError('REPLAY_INPUT_LOST', `question ${d.question_id} is not known to this build`, { reason: 'ruleset_unknown' })
    let fitted: FittedParams | null = null
    if (d.fitted_version !== null) {
      fitted = this.fits.get(d.question_id, d.fitted_version)
      if (!fitted) throw new EngineError('REPLAY_INPUT_LOST', `fitted parameters ${d.fitted_version} are not in the fit store`, { reason: 'fitted_state_missing' })
    }
    const snapshot = JSON.parse(d.journal) as FeatureSnapshot
    const res = policy.apply(question.evaluate(snapshot, fitted), question.id)
    return { decision_id: d.decision_id, original_verdict: d.decision, replayed_verdict: res.decision, matched_rules: res.matched_rules, policy_version: policy.version, deterministic: true }
  }

  /** state_ok: the recorded parts hash to state_hash, the ruleset of that version has that checksum, the fit hashes to its version. */
  verifyState(d: LedgerDecision): Verified {
    const parts = { model_id: d.model_id, jev_version: d.jev_version, fitted_version: d.fitted_version, policy_version: d.policy_version, policy_checksum: d.policy_checksum, release_version: d.release_version ?? null }
    if (stateHashOf(parts) !== d.state_hash) return false
    const policy = policyByVersion(d.policy_version)
    if (!policy) return 'unknown'
    if (policy.checksum !== d.policy_checksum) return false
    if (d.fitted_version === null) return true
    return this.fits.verify(d.question_id, d.fitted_version)
  }
}
