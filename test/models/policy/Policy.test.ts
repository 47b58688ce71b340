import t from 'tap'
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import canonicalize from 'canonicalize'
import { Policy, type RulesetBody } from '../../../models/policy/Policy.ts'
import { JEV_VERSION } from '../../../models/version.ts'

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
  t.equal(seal.ruleset.jev_version, JEV_VERSION)
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
