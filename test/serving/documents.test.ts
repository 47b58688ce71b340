/**
 * Derived documents agree with their single sources: the OpenAPI document validates as OpenAPI 3.1 with a real
 * validator and lists exactly the registry's routes with their error codes and prices; docs/errors.md and the error
 * registry agree in both directions; the discovery documents list exactly the paid/free routes.
 */
import t from 'tap'
import { readFile } from 'node:fs/promises'
import { Validator } from '@seriousme/openapi-schema-validator'
import { ROUTES } from '../../serving/routes/registry.ts'
import { concretePaidPaths, isPublic, routeErrors } from '../../serving/routes/derive.ts'
import { ERRORS, ERROR_CODES, REASONS, REASON_CODES } from '../../common/errors.ts'
import { ERRORS_DOC_PATH, parseErrorsDoc, parseReasonsDoc, renderErrorsDoc } from '../../serving/docs/errorsDoc.ts'
import { priceOf } from '../../product/billing/pricing.ts'
import { USDC_BASE } from '../../serving/payments/x402.ts'
import { PAY_TO, withServer } from '../helpers/serving/server.ts'
import { memoryServices } from '../helpers/serving/memoryServices.ts'

const getJson = async (url: string) => {
  const r = await fetch(url)
  return { status: r.status, type: r.headers.get('content-type'), body: JSON.parse(await r.text()) as any }
}

t.test('served OpenAPI validates as 3.1 and is identical at /openapi.json and /v1/openapi.json', async (t) => {
  const s = await withServer(t)
  const a = await getJson(`${s.url}/openapi.json`)
  const b = await getJson(`${s.url}/v1/openapi.json`)
  t.same(a.body, b.body)
  t.equal(a.body.openapi, '3.1.0')
  const validator = new Validator()
  const res = await validator.validate(a.body)
  t.ok(res.valid, JSON.stringify(res.errors, null, 1)?.slice(0, 2000))
  t.equal(validator.version, '3.1')
  // Negative control: the validator does reject a broken document.
  const broken = structuredClone(a.body)
  broken.paths['/v1/feed'].get.parameters[0].in = 'nowhere'
  t.notOk((await new Validator().validate(broken)).valid, 'a parameter with an invalid location is rejected')
})

t.test('registry ↔ OpenAPI: every public route once, with its codes and pricing; nothing extra', async (t) => {
  const s = await withServer(t)
  const doc = (await getJson(`${s.url}/openapi.json`)).body
  const ops = new Map<string, any>()
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(item)) ops.set(`${method.toUpperCase()} ${path}`, op)
  }
  const publicRoutes = ROUTES.filter(isPublic)
  t.equal(ops.size, publicRoutes.length, 'no operation without a route')
  for (const r of publicRoutes) {
    const op = ops.get(`${r.method} ${r.path}`)
    if (!t.ok(op, `${r.method} ${r.path} documented`)) continue
    t.equal(op.operationId, r.id)
    const documented = new Set<string>()
    for (const [status, resp] of Object.entries<any>(op.responses)) {
      if (Number(status) < 400) continue
      t.equal(resp.content['application/json'].schema.$ref, '#/components/schemas/ErrorEnvelope')
      for (const code of /code one of (.*)$/.exec(resp.description)![1]!.split(', ')) {
        documented.add(code)
        t.equal(String(ERRORS[code as keyof typeof ERRORS].status), status, `${code} under its status`)
      }
    }
    t.same([...documented].sort(), [...routeErrors(r)].sort(), `${r.id} error codes`)
    if (r.pay.kind === 'paid') {
      const [first] = concretePaidPaths(r)
      t.equal(op['x-pricing'].kind, 'paid')
      t.equal(op['x-payment'].amount, priceOf(first!.key).amount_atomic)
      t.equal(op['x-payment'].payTo, PAY_TO)
      t.equal(op['x-payment'].network, 'eip155:8453')
      t.ok(op.responses['402'].headers['PAYMENT-REQUIRED'])
    } else if (r.pay.kind === 'fee') {
      t.same(op['x-pricing'], { kind: 'fee', note: r.pay.note }, `${r.id}: a fee the route computes and challenges`)
      t.notOk(op['x-payment'])
    } else {
      t.same(op['x-pricing'], { kind: 'free' })
      t.notOk(op['x-payment'])
    }
  }
})

t.test('docs/errors.md ↔ error registry, both directions', async (t) => {
  const md = await readFile(ERRORS_DOC_PATH, 'utf8')
  t.equal(md, renderErrorsDoc(), 'docs/errors.md is regenerated (run `svc docs errors`)')
  const parsed = parseErrorsDoc(md)
  for (const code of ERROR_CODES) {
    t.same(parsed.get(code), { status: ERRORS[code].status, retryable: ERRORS[code].retryable, message: ERRORS[code].message }, `${code} documented as registered`)
  }
  for (const code of parsed.keys()) t.ok(code in ERRORS, `documented ${code} is registered`)
  const reasons = parseReasonsDoc(md)
  for (const reason of REASON_CODES) {
    t.same(reasons.get(reason), { codes: [...REASONS[reason].codes], meaning: REASONS[reason].meaning }, `reason ${reason} documented as registered`)
  }
  for (const reason of reasons.keys()) t.ok(reason in REASONS, `documented reason ${reason} is registered`)
  for (const [reason, { codes }] of reasons) for (const c of codes) t.ok(c in ERRORS, `${reason} comes with the registered code ${c}`)
  // Every code a route can answer with is registered (TypeScript guarantees it; this catches casts).
  for (const r of ROUTES) for (const c of routeErrors(r)) t.ok(c in ERRORS, `${r.id}: ${c}`)
})

t.test('the drift check detects a changed document', async (t) => {
  const parsed = parseErrorsDoc(renderErrorsDoc().replace('| VALIDATION | 400 |', '| VALIDATION | 422 |'))
  t.equal(parsed.get('VALIDATION')?.status, 422)
  t.not(parsed.get('VALIDATION')?.status, ERRORS.VALIDATION.status)
  const doc = renderErrorsDoc()
  t.notOk(parseReasonsDoc(doc.replace(/^\| clock_open \|.*\n/m, '')).has('clock_open'), 'a registered reason missing from the document is seen')
  const extra = parseReasonsDoc(doc.replace('| MALFORMED_JSON |', '| NOT_A_REASON | VALIDATION | invented |\n| MALFORMED_JSON |'))
  t.ok(extra.has('NOT_A_REASON') && !('NOT_A_REASON' in REASONS), 'a documented reason missing from the registry is seen')
})

t.test('/.well-known/x402.json lists every paid route (templated keys expanded) with exact-scheme requirements', async (t) => {
  const s = await withServer(t)
  const doc = (await getJson(`${s.url}/.well-known/x402.json`)).body
  const expected = ROUTES.filter((r) => r.pay.kind === 'paid' && isPublic(r)).flatMap((r) => concretePaidPaths(r).map((c) => `${r.method} ${c.path} ${c.key}`))
  t.same(doc.resources.map((r: any) => `${r.method} ${r.path} ${r.pricing_key}`).sort(), expected.sort())
  for (const r of doc.resources) {
    t.equal(r.accepts.length, 1)
    const a = r.accepts[0]
    t.equal(a.scheme, 'exact')
    t.equal(a.network, 'eip155:8453')
    t.equal(a.asset, USDC_BASE)
    t.equal(a.payTo, PAY_TO)
    t.match(a.amount, /^[1-9][0-9]*$/, 'integer atomic units')
    t.equal(a.amount, priceOf(r.pricing_key).amount_atomic)
    t.equal(r.resource, `${s.url}${r.path}`)
  }
  const pack = doc.resources.find((r: any) => r.pricing_key === 'billing.pack.booster_150k')
  t.equal(pack.accepts[0].amount, '150000000', '150 USD in 6-decimal USDC')
})

t.test('with no payment recipient configured, nothing advertises an address to pay', async (t) => {
  const s = await withServer(t, { config: { payTo: null }, services: memoryServices().parts })
  const doc = (await getJson(`${s.url}/.well-known/x402.json`)).body
  t.equal(doc.pay_to_configured, false)
  t.ok(doc.resources.length > 0, 'paid routes are still listed with their prices')
  for (const r of doc.resources) t.same(r.accepts, [], `${r.path}: no requirement without a recipient`)
  const pricing = (await getJson(`${s.url}/v1/pricing`)).body
  t.equal(pricing.data.payment.pay_to, null)
  t.same(pricing.data.payment.rails, ['credits'])
  const paid = await fetch(`${s.url}/v1/market/BTC/regime`)
  t.equal(paid.status, 402)
  const required = JSON.parse(Buffer.from(paid.headers.get('payment-required')!, 'base64').toString('utf8'))
  t.same(required.accepts, [], 'the challenge offers no x402 requirement')
  t.match(required.error, /credits \(x-svc-payer\)/)
  t.notMatch(JSON.stringify(await paid.json()), /0x0{40}/, 'never the zero address')
})

t.test('agent card, ai.txt, llms.txt, robots.txt and /docs', async (t) => {
  const s = await withServer(t, { config: { payTo: PAY_TO, docsUrl: 'https://docs.example.com/svc' } })
  const card = (await getJson(`${s.url}/.well-known/agent.json`)).body
  t.ok(card.name && card.description && card.version)
  t.equal(card.docs_url, 'https://docs.example.com/svc')
  t.same(card.endpoints.map((e: any) => `${e.method} ${e.path} ${e.paid}`).sort(), ROUTES.filter(isPublic).map((r) => `${r.method} ${r.path} ${r.pay.kind !== 'free'}`).sort())
  t.ok(card.payment.rails.some((r: any) => r.kind === 'x402' && r.network === 'eip155:8453'))

  const ai = await fetch(`${s.url}/.well-known/ai.txt`)
  t.match(ai.headers.get('content-type'), /^text\/plain/)
  t.match(await ai.text(), `${s.url}/llms.txt`)

  const llms = await (await fetch(`${s.url}/llms.txt`)).text()
  t.equal(await (await fetch(`${s.url}/llms-full.txt`)).text(), llms, 'same document under two names')
  for (const r of ROUTES.filter(isPublic)) t.match(llms, `\`${r.method} ${r.path}\``)
  // A route whose fee depends on the request (the rate lock) is paid, never listed among the free endpoints.
  const [free, paidPart] = llms.split('## Paid endpoints')
  t.notMatch(free!, '`POST /v1/billing/rate-lock`', 'the rate-lock purchase is not listed as free')
  t.match(paidPart!, /`POST \/v1\/billing\/rate-lock` \(paid: the rate-lock fee/)

  t.equal(await (await fetch(`${s.url}/robots.txt`)).text(), 'User-agent: *\nAllow: /\nDisallow: /v1/admin/\n')
  const docs = await fetch(`${s.url}/docs`, { redirect: 'manual' })
  t.equal(docs.status, 302)
  t.equal(docs.headers.get('location'), 'https://docs.example.com/svc')
})
