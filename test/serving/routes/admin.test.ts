/**
 * GET /v1/admin/economy-funnel over real HTTP on 127.0.0.1: absent (404 like any unknown path) where no admin key
 * configures the funnel; a missing or wrong x-admin-key is 403 OPS_FORBIDDEN (reason ADMIN_KEY_REJECTED); the right
 * key gets the spec's shape; limit outside 1..500 is 400 VALIDATION; the route is in no public document.
 */
import t from 'tap'
import { join } from 'node:path'
import { EmbeddedLog } from '../../../pipeline/log/EmbeddedLog.ts'
import { FUNNEL_STEPS } from '../../../product/funnel/computeFunnel.ts'
import { FunnelService } from '../../../product/funnel/FunnelService.ts'
import { FUNNEL_REPORT } from '../../../serving/routes/admin.ts'
import { makeAjv, withServer } from '../../helpers/serving/server.ts'
import { makeTempDir } from '../../helpers/tmp.ts'
import { DECISIONS, RESOLVED, drawRows, ledgerSource } from '../../product/funnel/fixtures.ts'

const PATH = '/v1/admin/economy-funnel'
const KEY = 'route-test-admin-key'

async function funnelOn(t: Parameters<typeof makeTempDir>[0]) {
  const dir = await makeTempDir(t, 'svc-funnel-route-')
  const log = await EmbeddedLog.open(join(dir, 'log'))
  const funnel = await FunnelService.open({
    log, clock: { now: () => Date.now() }, adminKey: KEY, intervalMs: 60_000, partitions: 1,
    sources: { ledger: ledgerSource(DECISIONS, RESOLVED).source, draws: { allRows: drawRows } },
  })
  t.teardown(async () => {
    await funnel.close()
    await log.close()
  })
  return funnel
}

const get = async (url: string, headers: Record<string, string> = {}) => {
  const res = await fetch(url, { headers })
  const text = await res.text()
  return { status: res.status, text, body: text.startsWith('{') ? JSON.parse(text) : null }
}

t.test('no admin key configured: the route does not exist', async (t) => {
  const s = await withServer(t)
  for (const headers of [{}, { 'x-admin-key': KEY }] as Array<Record<string, string>>) {
    const r = await get(s.url + PATH, headers)
    t.equal(r.status, 404)
    t.equal(r.body.error.code, 'ROUTE_NOT_FOUND', 'the same 404 as any unknown path')
  }
  t.equal((await get(`${s.url}/v1/admin/nothing-here`)).body.error.code, 'ROUTE_NOT_FOUND')
})

t.test('with the funnel wired: the key both ways, the shape, limit validation', async (t) => {
  const s = await withServer(t, { services: { funnel: await funnelOn(t) } })
  for (const headers of [{}, { 'x-admin-key': 'wrong' }, { 'x-admin-key': 'route-test-admin-kez' }] as Array<Record<string, string>>) {
    const r = await get(s.url + PATH, headers)
    t.equal(r.status, 403, `refused: ${JSON.stringify(headers)}`)
    t.match(r.body.error, { code: 'OPS_FORBIDDEN', detail: { reason: 'ADMIN_KEY_REJECTED', field: '/headers/x-admin-key' } })
  }

  const ok = await get(`${s.url}${PATH}?limit=5`, { 'x-admin-key': KEY })
  t.equal(ok.status, 200)
  const validate = makeAjv().compile(FUNNEL_REPORT)
  t.ok(validate(ok.body.data), JSON.stringify(validate.errors))
  const data = ok.body.data
  t.same(data.funnel.steps.map((x: { step: string }) => x.step), FUNNEL_STEPS)
  t.match(data.funnel.steps.find((x: { step: string }) => x.step === 'decision_run'), { count: 3, measurable: true })
  t.match(data.funnel.steps.find((x: { step: string }) => x.step === 'xp_award'), { count: null, measurable: false, note: 'the Arena is not wired on this deployment' })
  t.equal(data.activation.first_lock_to_first_grade.median_ms, null, 'no duel wired: no median')
  t.same(data.window, { limit: 5, snapshots: 1, newest_at: data.funnel.at, oldest_at: data.funnel.at })
  t.equal(data.trend.length, 1)
  t.equal((await get(s.url + PATH, { 'x-admin-key': KEY })).body.data.window.limit, 30, 'default limit')

  for (const limit of ['0', '501', 'ten', '-1', '2.5']) {
    const r = await get(`${s.url}${PATH}?limit=${limit}`, { 'x-admin-key': KEY })
    t.equal(r.status, 400, `limit=${limit}`)
    t.match(r.body.error, { code: 'VALIDATION', detail: { reason: 'REQUEST_VALIDATION_FAILED', field: '/query/limit' } })
  }
})

t.test('the route is in no public document', async (t) => {
  const s = await withServer(t, { services: { funnel: await funnelOn(t) } })
  for (const doc of ['/openapi.json', '/.well-known/mcp.json', '/.well-known/x402/mcp.json', '/.well-known/agent.json', '/.well-known/x402.json', '/.well-known/ai.txt', '/llms.txt', '/llms-full.txt']) {
    const r = await get(s.url + doc)
    t.equal(r.status, 200, doc)
    t.notMatch(r.text, 'economy-funnel', `${doc} does not list the funnel`)
    t.notMatch(r.text, '/v1/admin', `${doc} names no admin path`)
  }
  const robots = await get(`${s.url}/robots.txt`)
  t.match(robots.text, 'Disallow: /v1/admin/')
  const tools = await fetch(`${s.url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
  })
  const text = await tools.text()
  t.match(text, 'svc_market_state', 'the MCP catalog answered')
  t.notMatch(text, 'economy-funnel', 'no MCP tool for the funnel')
})
