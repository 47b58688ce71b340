/**
 * The questions and assets one engine answers, and the lookups the write path (DecisionEngine) and the free reads
 * (LedgerView) share: a question or asset the catalog does not hold is a VALIDATION refusal naming the field, and a
 * question's clocks run on the account clock when it is account-scoped (the subject is a wallet), else on the engine's.
 */
import { CANONICAL_ASSETS } from '../ingest/Tick.ts'
import type { QuestionModel } from '../models/QuestionModel.ts'
import { QUESTIONS } from '../models/questions/index.ts'
import { EngineError } from './EngineError.ts'
import type { LiveFeatures } from './LiveFeatures.ts'

export class QuestionCatalog {
  private readonly questions: Map<string, QuestionModel>
  private readonly assets: Set<string>

  constructor(options: { questions?: readonly QuestionModel[]; assets?: readonly string[] } = {}) {
    this.questions = new Map((options.questions ?? QUESTIONS).map((q) => [q.id, q]))
    this.assets = new Set(options.assets ?? CANONICAL_ASSETS)
  }

  /** The question, or undefined (for readers that skip rows of questions this engine no longer answers). */
  find(id: string): QuestionModel | undefined {
    return this.questions.get(id)
  }

  question(id: string): QuestionModel {
    const q = this.questions.get(id)
    if (!q) throw new EngineError('VALIDATION', `unknown question_id '${id}'`, { reason: 'REQUEST_VALIDATION_FAILED', field: 'question_id' })
    return q
  }

  hasAsset(asset: string): boolean {
    return this.assets.has(asset)
  }

  checkAsset(asset: string): void {
    if (!this.assets.has(asset)) throw new EngineError('VALIDATION', `unknown asset '${asset}'`, { reason: 'REQUEST_VALIDATION_FAILED', field: 'asset' })
  }

  /** Event time for a question's clocks: the account clock for account-scoped questions, else the engine's. */
  clockFor(questionId: string, live: LiveFeatures): number | null {
    return this.questions.get(questionId)?.scope === 'account' ? live.accountNow() : live.now()
  }
}
