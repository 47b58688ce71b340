import t from 'tap'
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import canonicalize from 'canonicalize'
import { Policy, type RulesetBody } from '../../../models/policy/Policy.ts'
import { JEV_VERSION } from '../../../models/version.ts'
import { ACTIVE_POLICY_VERSION, activePolicy, knownPolicyVersions, policyByVersion } from '../../../models/policy/rulesets.ts'

const bodyText = readFileSync(new URL('../../../models/policy/ruleset.v1.json', import.meta.url), 'utf8')

t.test('checksum recomputes from the body with JCS (RFC 8785) + SHA-256, by an independent canonicaliser', async (t) => {
  const policy = Policy.v1()
  const body = JSON.parse(bodyText) as RulesetBody
  const canonical = (canonicalize as unknown as (v: unknown) => string)(body)
  const expected = createHash('sha256').update(canonical, 'utf8').digest('hex')
  t.equal(policy.checksum, expected)
  t.match(policy.checksum, /^[0-9a-f]{64}$/)
  const seal = policy.seal()
  t.same(seal, { version: 'policy-1.0.0', checksum: expected, ruleset: body })
  t.equal(seal.ruleset.jev_version, 'jev-1.0.0', 'sealed for the jev-1.0.0 models')
})

t.test('changing any rule changes the checksum; key order does not', async (t) => {
  const base = JSON.parse(bodyText) as RulesetBody
  const original = new Policy(base).checksum
  const edited = structuredClone(base)
  edited.binary.bands[4]!.action = 'monitor'
  t.not(new Policy(edited).checksum, original, 'an action changed')
  const threshold = structuredClone(base)
  threshold.refusal.min_confidence = 0.06
  t.not(new Policy(threshold).checksum, original, 'the minimum confidence changed')
  const reordered = Object.fromEntries(Object.entries(base).reverse()) as unknown as RulesetBody
  t.same(Object.keys(reordered), Object.keys(base).reverse())
  t.equal(new Policy(reordered).checksum, original, 'member order is canonicalised away')
})

t.test('bands map probabilities to decision and action; choice answers become regime:<class>', async (t) => {
  const p = Policy.v1()
  const claim = (probability: number) => ({ kind: 'claim' as const, event: 'e', horizon: '240m', conditions: {}, probability, distribution: null, confidence: 0.5, evidence: {} })
  t.same([0.1, 0.3, 0.5, 0.55, 0.7, 1].map((x) => p.apply(claim(x)).decision), ['unlikely', 'lean_unlikely', 'no_edge', 'lean_likely', 'likely', 'likely'])
  t.same([0.1, 0.5, 0.6, 0.9].map((x) => p.apply(claim(x)).action), ['none', 'none', 'monitor', 'alert'])
  const choice = p.apply({ ...claim(0.45), horizon: '60m', distribution: { trend_up: 0.2, trend_down: 0.1, range_quiet: 0.45, range_volatile: 0.25 } })
  t.same(choice, { decision: 'regime:range_quiet', action: 'monitor', probability: 0.45, confidence: 0.5, matched_rules: ['choice.moderate'] })
})

t.test('a ruleset whose bands do not tile [0, 1] is refused', async (t) => {
  const bad = JSON.parse(bodyText) as RulesetBody
  bad.binary.bands[1]!.min = 0.31
  t.throws(() => new Policy(bad), /binary\.bands\[1\]\.min/)
})

// ------------------------------------------------------------------ v2: per-question choice templates

const v2Text = readFileSync(new URL('../../../models/policy/ruleset.v2.json', import.meta.url), 'utf8')

t.test('v2 checksum recomputes from its body with JCS + SHA-256 by an independent canonicaliser; v1 is untouched', async (t) => {
  const v2 = Policy.v2()
  const body = JSON.parse(v2Text) as RulesetBody
  const expected = createHash('sha256').update((canonicalize as unknown as (v: unknown) => string)(body), 'utf8').digest('hex')
  t.equal(v2.checksum, expected)
  t.same(v2.seal(), { version: 'policy-2.0.0', checksum: expected, ruleset: body })
  t.not(v2.checksum, Policy.v1().checksum)
  // The sealed v1 body is the one v1 rows were recorded under: its checksum (README benchmark lines) must not move.
  t.equal(Policy.v1().checksum.slice(0, 12), '404a59ccfefd', 'v1 checksum unchanged')
})

t.test('registry: v1, v2 and v3 all replayable by version or pin; v3 is the active ruleset, sealed for this jev', async (t) => {
  t.same(knownPolicyVersions(), ['policy-1.0.0', 'policy-2.0.0', 'policy-3.0.0'])
  t.equal(policyByVersion('policy-1.0.0')?.checksum, Policy.v1().checksum)
  t.equal(policyByVersion('2.0.0')?.checksum, Policy.v2().checksum)
  t.equal(policyByVersion('v2.0.0')?.version, 'policy-2.0.0')
  t.equal(policyByVersion('v3.0.0')?.version, 'policy-3.0.0')
  t.equal(policyByVersion('v4.0.0'), null)
  t.equal(activePolicy().version, ACTIVE_POLICY_VERSION)
  t.equal(ACTIVE_POLICY_VERSION, 'policy-3.0.0')
  t.equal(activePolicy().jevVersion, JEV_VERSION)
  t.equal(Policy.v1().jevVersion, 'jev-1.0.0', 'older rulesets keep the jev they were sealed for')
  t.equal(Policy.v2().jevVersion, 'jev-1.0.0')
})

t.test('v3 is v2 sealed for jev-2.0.0: the same rules, its own checksum', async (t) => {
  const v2 = JSON.parse(v2Text) as RulesetBody
  const v3 = Policy.v3().seal().ruleset as RulesetBody
  t.same({ ...v3, version: v2.version, jev_version: v2.jev_version }, v2)
  t.equal(v3.jev_version, 'jev-2.0.0')
  t.not(Policy.v3().checksum, Policy.v2().checksum)
})

t.test('v2: each choice question has its own decision text; S01 text and every binary verdict equal v1', async (t) => {
  const v1 = Policy.v1()
  const v2 = Policy.v2()
  const claim = (probability: number, distribution: Record<string, number> | null = null) => ({ kind: 'claim' as const, event: 'e', horizon: '60m', conditions: {}, probability, distribution, confidence: 0.5, evidence: {} })
  const regime = claim(0.45, { trend_up: 0.2, trend_down: 0.1, range_quiet: 0.45, range_volatile: 0.25 })
  t.same(v2.apply(regime, 'S01_market_regime'), v1.apply(regime, 'S01_market_regime'), 'S01 identical under both')
  t.equal(v2.apply(regime, 'S01_market_regime').decision, 'regime:range_quiet')
  const state = claim(0.7, { WATCHING: 0.1, ACCUMULATING: 0.7, HIGH_CONVICTION: 0.05, DISTRIBUTING: 0.1, EXITING: 0.05 })
  t.same(v2.apply(state, 'S09_wallet_state'), { decision: 'wallet_state:ACCUMULATING', action: 'alert', probability: 0.7, confidence: 0.5, matched_rules: ['choice.strong'] })
  t.equal(v1.apply(state, 'S09_wallet_state').decision, 'regime:ACCUMULATING', 'v1 stays as sealed (the reason for v2)')
  const risk = claim(0.5, { allow: 0.5, review: 0.3, block: 0.2 })
  t.same(v2.apply(risk, 'S11_risk'), { decision: 'risk:allow', action: 'monitor', probability: 0.5, confidence: 0.5, matched_rules: ['choice.moderate'] })
  for (const p of [0.1, 0.3, 0.5, 0.55, 0.7, 1]) t.same(v2.apply(claim(p), 'S10_wallet_flow'), v1.apply(claim(p)), `binary ${p}`)
  const refusal = { kind: 'refusal' as const, refusal: 'suppress' as const, reason: 'x', event: 'e', horizon: '60m', conditions: {} }
  t.same(v2.apply(refusal, 'S09_wallet_state'), v1.apply(refusal))
  t.throws(() => v2.apply(state), /no choice template/, 'a choice answer needs its question under v2')
  t.throws(() => v2.apply(state, 'S05_volatility_expansion'), /no choice template for S05/)
})

t.test('a ruleset must name exactly one template form, each with {class}', async (t) => {
  const both = JSON.parse(v2Text) as RulesetBody
  both.choice.decision_template = 'x:{class}'
  t.throws(() => new Policy(both), /exactly one of/)
  const noClass = JSON.parse(v2Text) as RulesetBody
  noClass.choice.decision_templates!.S11_risk = 'risk'
  t.throws(() => new Policy(noClass), /decision_templates\.S11_risk must contain \{class\}/)
})
