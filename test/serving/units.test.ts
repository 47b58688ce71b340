/**
 * Known answers for the price table, ladder, token buckets and router precedence.
 * Sources: spec Billing resources (pack and plan prices), Limits ("price rises 25% per rung"),
 * x402-v2.md §3 ($0.01 = "10000" atomic USDC).
 */
import t from 'tap'
import { atomicToUsd, buildLadder, ladderMultiplier, priceOf, PRICING_KEYS, UNMEASURED_LADDER } from '../../product/billing/pricing.ts'
import { RateLimiter } from '../../serving/RateLimiter.ts'
import { Router } from '../../serving/routes/router.ts'
import { ROUTES } from '../../serving/routes/registry.ts'
import { rollupStatus } from '../../product/platform/readiness.ts'

t.test('prices: rung 0 and the 1.25 ladder', async (t) => {
  t.same(priceOf('decision.deep', 0), { key: 'decision.deep', credits: 1000, amount_atomic: '1000000', usd: '1.00', rung: 0 })
  t.same(priceOf('decision.deep', 1), { key: 'decision.deep', credits: 1250, amount_atomic: '1250000', usd: '1.25', rung: 1 })
  t.equal(priceOf('decision.deep', 2).amount_atomic, '1562500', '1.25^2 = 1.5625 exactly')
  t.equal(priceOf('decision.deep', 3).credits, 1954, '1953.125 credits round up')
  t.equal(priceOf('perp.funding', 0).usd, '0.10')
  t.equal(priceOf('billing.pack.booster_150k').amount_atomic, '150000000')
  t.equal(priceOf('billing.pack.booster_650k').usd, '600.00')
  t.equal(priceOf('billing.pack.booster_2m4').credits, 2_400_000)
  t.equal(priceOf('billing.plan.operator').usd, '99.00')
  t.equal(priceOf('billing.plan.desk').credits, 400_000)
  t.equal(priceOf('billing.plan.desk_pro').usd, '499.00')
  t.equal(priceOf('billing.plan.operator', 1).usd, '123.75', 'plans scale with the rung; credits do not')
  t.equal(priceOf('billing.plan.operator', 1).credits, 150_000)
  t.equal(atomicToUsd(10_000n), '0.01', 'x402-v2.md §3: $0.01 = 10000')
  t.equal(ladderMultiplier(4), 2.44140625)
  for (const k of PRICING_KEYS) t.match(priceOf(k).amount_atomic, /^[1-9][0-9]*$/)
  // Packs are priced at a premium over plans (spec): every plan's USD per credit is below every pack's.
  const perCredit = (k: (typeof PRICING_KEYS)[number]) => Number(priceOf(k).amount_atomic) / priceOf(k).credits
  const plans = PRICING_KEYS.filter((k) => k.startsWith('billing.plan.')).map(perCredit)
  const packs = PRICING_KEYS.filter((k) => k.startsWith('billing.pack.')).map(perCredit)
  t.ok(Math.max(...plans) < Math.min(...packs))
})

t.test('ladder object: unmeasured rung 0, measured progress, top rung', async (t) => {
  const l0 = buildLadder(UNMEASURED_LADDER)
  t.equal(l0.rung, 0)
  t.equal(l0.multiplier, 1)
  t.equal(l0.pending, null)
  t.same(l0.gates, [
    { kind: 'realized_outcomes', threshold: 1000, current: null, met: false },
    { kind: 'published_bands', threshold: 1, current: null, met: false },
  ], 'unmeasured is null, never zero')
  t.same(l0.next, { rung: 1, evidence: { threshold: 1000, remaining: null }, gates: [{ kind: 'published_bands', threshold: 1, current: null, met: false }] })
  const l = buildLadder({ ...UNMEASURED_LADDER, realized_outcomes: 400, gate_values: { published_bands: 2 } })
  t.same(l.gates[0], { kind: 'realized_outcomes', threshold: 1000, current: 400, met: false, remaining: 600 })
  t.same(l.gates[1], { kind: 'published_bands', threshold: 1, current: 2, met: true, remaining: 0 })
  t.equal(l.next?.evidence.remaining, 600)
  const top = buildLadder({ ...UNMEASURED_LADDER, rung: 4, effective_at: '2027-01-01T00:00:00.000Z' })
  t.equal(top.next, null)
  t.same(top.gates, [])
  t.equal(top.multiplier, 1.25 ** 4)
})

t.test('token bucket: burst, refill, reset and retry-after', async (t) => {
  const rl = new RateLimiter({ ip: { burst: 3, refillPerSec: 2 }, payer: { burst: 1, refillPerSec: 1 } })
  const now = 1_000_000
  t.same([1, 2, 3].map(() => rl.takeIp('a', now).remaining), [2, 1, 0])
  const denied = rl.takeIp('a', now)
  t.equal(denied.allowed, false)
  // One wait on a refusal (issue 29): the next token comes in 0.5 s at 2/s, carried in whole seconds by all three.
  t.equal(denied.resetSec, 1, 'one token at 2/s: 0.5 s, rounded up to the second')
  t.equal(denied.retryAfterMs, 1000, 'retry_after_ms is the same wait as RateLimit-Reset')
  t.equal(rl.takeIp('a', now + 500).allowed, true, 'refilled')
  t.equal(rl.takeIp('b', now).allowed, true, 'buckets are per key')
  t.equal(rl.takePayer('0xABC', now).allowed, true)
  t.equal(rl.takePayer('0xabc', now).allowed, false, 'payer keys are case-insensitive')
})

t.test('bucket map stays bounded under many distinct clients', async (t) => {
  const rl = new RateLimiter({ ip: { burst: 2, refillPerSec: 1 }, payer: { burst: 1, refillPerSec: 1 } }, 100)
  for (let i = 0; i < 1000; i++) rl.takeIp(`10.0.${i >> 8}.${i & 255}`, 0)
  t.ok((rl as unknown as { byIp: { size: number } }).byIp.size <= 100)
})

t.test('router: static beats parameter, 405 vs 404, decoding', async (t) => {
  const r = new Router(ROUTES)
  const latest = r.match('GET', '/v1/decisions/latest')
  t.equal(latest.kind === 'found' && latest.route.id, 'decisions.latest')
  const byId = r.match('GET', '/v1/decisions/abc')
  t.same(byId.kind === 'found' && [byId.route.id, byId.params], ['decisions.get', { decision_id: 'abc' }])
  const opp = r.match('GET', '/v1/funding/opportunities')
  t.equal(opp.kind === 'found' && opp.route.id, 'funding.opportunities')
  const fa = r.match('GET', '/v1/funding/ETH')
  t.equal(fa.kind === 'found' && fa.route.id, 'funding.asset')
  const trailing = r.match('GET', '/v1/pricing/')
  t.equal(trailing.kind === 'found' && trailing.route.id, 'pricing')
  t.same(r.match('PUT', '/v1/market/BTC/regime'), { kind: 'method_not_allowed', allow: 'GET, HEAD' })
  t.same(r.match('GET', '/v1/market/BTC/regime/extra'), { kind: 'not_found' })
  t.same(r.match('GET', '/v1/decisions/'), { kind: 'method_not_allowed', allow: 'POST' }, 'trailing slash, then 405')
  const enc = r.match('GET', '/v1/market/BT%43')
  t.same(enc.kind === 'found' && enc.params, { asset: 'BTC' })
  t.same(r.match('GET', '/v1/market/%E0%A4%A'), { kind: 'bad_path' })
  t.throws(() => new Router([...ROUTES, ROUTES[0]!]), /duplicate route/)
  t.same(r.match('GET', '/v1/market//regime'), { kind: 'not_found' }, 'an empty parameter segment matches nothing')
  t.same(r.match('GET', '/v1/decisionsX/abc'), { kind: 'not_found' })
})

/**
 * The matcher's rule written the plain way: an exact static path wins outright (GET /v1/decisions/next is 405, not
 * a decision id); otherwise split into segments, literal segments before parameters.
 */
function referenceMatch(method: string, rawPath: string): string {
  const path = rawPath.length > 1 && rawPath.endsWith('/') ? rawPath.slice(0, -1) : rawPath
  const lookup = method === 'HEAD' ? 'GET' : method
  const statics = ROUTES.filter((x) => x.path === path)
  if (statics.length > 0) {
    const hit = statics.find((x) => x.method === lookup)
    return hit ? `found ${hit.id}` : 'method_not_allowed'
  }
  const parts = path.split('/').slice(1)
  const candidates = ROUTES.filter((x) => {
    const segs = x.path.split('/').slice(1)
    return segs.length === parts.length && segs.every((seg, i) => (seg.startsWith('{') ? parts[i] !== '' : seg === parts[i]))
  })
  const score = (p: string) => p.split('/').map((seg) => (seg.startsWith('{') ? '1' : '0')).join('')
  const byTemplate = new Map<string, string[]>()
  for (const c of candidates) byTemplate.set(c.path, [...(byTemplate.get(c.path) ?? []), c.method])
  const ordered = [...byTemplate.keys()].sort((a, b) => (score(a) < score(b) ? -1 : score(a) > score(b) ? 1 : 0))
  for (const p of ordered) {
    const hit = ROUTES.find((x) => x.path === p && x.method === lookup)
    if (hit) return `found ${hit.id}`
  }
  return ordered.length > 0 ? 'method_not_allowed' : 'not_found'
}

t.test('router agrees with the plain split-based rule on every template and its near misses', async (t) => {
  const r = new Router(ROUTES)
  const fills = ['x', 'latest', 'BTC', 'e4178ea9-4fc5-8949-9f24-30ccd6fad9a9', 'open', '']
  const paths = new Set<string>()
  for (const route of ROUTES) {
    for (const fill of fills) {
      const p = route.path.replace(/\{[a-z_]+\}/g, fill)
      for (const variant of [p, p + '/', p + '/extra', p.slice(0, p.lastIndexOf('/')), p + '//', p.replace('/v1/', '/v2/')]) paths.add(variant)
    }
  }
  let compared = 0
  for (const path of paths) {
    for (const method of ['GET', 'POST', 'HEAD', 'DELETE']) {
      const got = r.match(method, path)
      const want = referenceMatch(method, path)
      const gotText = got.kind === 'found' ? `found ${got.route.id}` : got.kind
      if (gotText !== want) t.fail(`${method} ${path}: router ${gotText}, reference ${want}`)
      compared++
    }
  }
  t.ok(compared > 1000, `compared ${compared} method/path pairs`)
})

t.test('provider rollup', async (t) => {
  const p = (status: 'ok' | 'degraded' | 'down', critical: boolean) => ({ slug: 's', kind: 'k', status, last_success_at: null, latency_ms: null, error_class: null, critical })
  t.equal(rollupStatus([]), 'ok')
  t.equal(rollupStatus([p('ok', true), p('degraded', false)]), 'degraded')
  t.equal(rollupStatus([p('down', false)]), 'degraded', 'non-critical down only degrades')
  t.equal(rollupStatus([p('ok', false), p('down', true)]), 'down')
})
