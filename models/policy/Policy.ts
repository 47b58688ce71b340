/**
 * The sealed policy ruleset: maps a model output to the recorded decision and action.
 *
 * Spec, Decision record: "probability: number; 0 when the decision is a refusal; confidence: number; 0 when the
 * decision is a refusal; decision: verdict kind; refusal kinds stale_input, insufficient_confidence, suppress; action:
 * policy action; policy_version: version of the sealed ruleset in force". Intelligence measures: "Policy seal:
 * { version, checksum, ruleset }; the checksum is recomputable from the body." Replay result carries matched_rules.
 *
 * checksum = SHA-256 (lowercase hex) of the RFC 8785 (JCS) canonical JSON of the ruleset body (common/jcs.ts), so
 * anyone can recompute it from the served body. The bodies are models/policy/ruleset.v<n>.json (sealed: a body never
 * changes, a new rule is a new version); their values of decision and action are listed in docs/decisions.md.
 *
 * Choice decisions: v1 renders every choice answer with one template ('regime:{class}'); from v2 on the template is
 * per question (`choice.decision_templates`: S01 'regime:{class}', S09 'wallet_state:{class}', S11
 * 'risk:{class}'), so an account answer never reads as a market regime.
 */
import RULESET_V1 from './ruleset.v1.json' with { type: 'json' }
import RULESET_V2 from './ruleset.v2.json' with { type: 'json' }
import RULESET_V3 from './ruleset.v3.json' with { type: 'json' }
import { jcsSha256 } from '../../common/hash.ts'
import { REFUSAL_KINDS, type ModelOutput, type RefusalKind } from '../QuestionModel.ts'

export const DECISION_VERDICTS = ['likely', 'lean_likely', 'no_edge', 'lean_unlikely', 'unlikely'] as const
export const ACTIONS = ['alert', 'monitor', 'none', 'refuse'] as const
export type Action = (typeof ACTIONS)[number]

interface Band {
  rule: string
  min: number
  max: number
  action: Action
}
export interface RulesetBody {
  version: string
  jev_version: string
  refusal: {
    kinds: RefusalKind[]
    record: { probability: 0; confidence: 0; action: 'refuse' }
    min_confidence: number
    min_confidence_decision: RefusalKind
  }
  binary: { convention: string; bands: (Band & { decision: string })[] }
  /** v1: one `decision_template`; v2 on: `decision_templates` by question_id (every choice question listed). */
  choice: { decision_template?: string; decision_templates?: Record<string, string>; convention: string; bands: Band[] }
}

export interface PolicyResult {
  decision: string
  action: Action
  probability: number
  confidence: number
  matched_rules: string[]
}

export interface PolicySeal {
  version: string
  checksum: string
  ruleset: RulesetBody
}

function checkBands(bands: readonly Band[], where: string): void {
  if (bands.length === 0) throw new RangeError(`${where}: no bands`)
  let edge = 0
  bands.forEach((b, i) => {
    if (b.min !== edge) throw new RangeError(`${where}[${i}].min must be ${edge} (bands must tile [0, 1] in order)`)
    if (!(b.max > b.min)) throw new RangeError(`${where}[${i}].max must exceed min`)
    if (!ACTIONS.includes(b.action)) throw new RangeError(`${where}[${i}].action: unknown action '${b.action}'`)
    edge = b.max
  })
  if (edge !== 1) throw new RangeError(`${where}: bands must end at 1`)
}

function band<B extends Band>(bands: readonly B[], p: number): B {
  for (const b of bands) if (p >= b.min && p < b.max) return b
  return bands[bands.length - 1]!
}

export class Policy {
  readonly body: RulesetBody
  readonly checksum: string

  constructor(body: RulesetBody) {
    if (!REFUSAL_KINDS.every((k) => body.refusal.kinds.includes(k))) throw new RangeError('refusal.kinds must list every refusal kind')
    if (!(body.refusal.min_confidence >= 0 && body.refusal.min_confidence < 1)) throw new RangeError('refusal.min_confidence must be in [0, 1)')
    checkBands(body.binary.bands, 'binary.bands')
    checkBands(body.choice.bands, 'choice.bands')
    const { decision_template: one, decision_templates: per } = body.choice
    if ((one === undefined) === (per === undefined)) throw new RangeError('choice: exactly one of decision_template and decision_templates')
    if (one !== undefined && !one.includes('{class}')) throw new RangeError('choice.decision_template must contain {class}')
    for (const [q, tpl] of Object.entries(per ?? {})) if (!tpl.includes('{class}')) throw new RangeError(`choice.decision_templates.${q} must contain {class}`)
    this.body = body
    this.checksum = jcsSha256(body)
  }

  /** The sealed v1 ruleset (kept so v1 rows replay under the ruleset they were recorded with). */
  static v1(): Policy {
    return Policy.sealed('v1')
  }

  /** The sealed v2 ruleset: per-question choice templates (jev-1.0.0 models). */
  static v2(): Policy {
    return Policy.sealed('v2')
  }

  /** The sealed v3 ruleset: v2's rules for the jev-2.0.0 models; the one in force for new decisions (rulesets.ts). */
  static v3(): Policy {
    return Policy.sealed('v3')
  }

  /**
   * The rulesets ship inside the code (imported JSON modules): no file is read at run time, so models stay pure. Each
   * names the model layer it was sealed for; only the ruleset in force must name this code's (rulesets.ts), older
   * ones stay loadable so the rows recorded under them replay.
   */
  private static sealed(name: 'v1' | 'v2' | 'v3'): Policy {
    const body = structuredClone(name === 'v1' ? RULESET_V1 : name === 'v2' ? RULESET_V2 : RULESET_V3) as RulesetBody
    return new Policy(body)
  }

  /** The model layer (jev_version) this ruleset was sealed for. */
  get jevVersion(): string {
    return this.body.jev_version
  }

  /** The decision text of a choice answer with modal class `cls` for `questionId` (v2: that question's template). */
  choiceDecision(questionId: string | undefined, cls: string): string {
    const { decision_template: one, decision_templates: per } = this.body.choice
    if (one !== undefined) return one.replace('{class}', cls)
    const tpl = questionId === undefined ? undefined : per?.[questionId]
    if (tpl === undefined) throw new RangeError(`${this.version} has no choice template for ${questionId ?? 'an unnamed question'}`)
    return tpl.replace('{class}', cls)
  }

  get version(): string {
    return this.body.version
  }

  seal(): PolicySeal {
    return { version: this.body.version, checksum: this.checksum, ruleset: this.body }
  }

  /**
   * Decision, action and the recorded numbers for one model output of `questionId`; matched_rules name every rule
   * that fired. A choice answer under a ruleset with per-question templates needs the question id.
   */
  apply(output: ModelOutput, questionId?: string): PolicyResult {
    const r = this.body.refusal
    if (output.kind === 'refusal') {
      return { decision: output.refusal, action: r.record.action, probability: r.record.probability, confidence: r.record.confidence, matched_rules: [`refusal.${output.refusal}`] }
    }
    if (!(output.confidence >= r.min_confidence)) {
      return {
        decision: r.min_confidence_decision,
        action: r.record.action,
        probability: r.record.probability,
        confidence: r.record.confidence,
        matched_rules: ['refusal.min_confidence'],
      }
    }
    if (output.distribution) {
      let modal = ''
      let best = -Infinity
      for (const [cls, p] of Object.entries(output.distribution)) {
        if (p > best) {
          best = p
          modal = cls
        }
      }
      const b = band(this.body.choice.bands, output.probability)
      return {
        decision: this.choiceDecision(questionId, modal),
        action: b.action,
        probability: output.probability,
        confidence: output.confidence,
        matched_rules: [b.rule],
      }
    }
    const b = band(this.body.binary.bands, output.probability)
    return { decision: b.decision, action: b.action, probability: output.probability, confidence: output.confidence, matched_rules: [b.rule] }
  }
}
