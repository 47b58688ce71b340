/**
 * No document names a route the registry does not have: every /v1 path in README, docs/, sql/README.md,
 * notebooks/README.md and the served discovery documents (llms.txt, ai.txt, agent.json, x402.json, OpenAPI) matches
 * a registry route (a {param} segment on either side matches any one segment). A route renamed or removed without its
 * documents fails here.
 */
import t from 'tap'
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { ROUTES } from '../../serving/routes/registry.ts'
import { withServer } from '../helpers/serving/server.ts'

const ROOT = new URL('../../', import.meta.url).pathname
/** robots.txt's rule for the operator routes (spec: "disallows /v1/admin/"): a prefix, not a route. */
const PREFIXES = new Set(['/v1/admin/'])

const MENTION = /\/v1\/[A-Za-z0-9_{}.\-/]*/g

function mentions(text: string): string[] {
  return [...text.matchAll(MENTION)].map((m) => m[0].replace(/[.,]+$/, ''))
}

const segments = (p: string) => p.split('/').filter(Boolean)
const isParam = (s: string) => /^\{[a-z_]+\}$/.test(s)

function matchesRoute(path: string): boolean {
  if (PREFIXES.has(path)) return true
  const want = segments(path)
  return ROUTES.some((r) => {
    const have = segments(r.path)
    return have.length === want.length && have.every((s, i) => s === want[i] || isParam(s) || isParam(want[i]!))
  })
}

t.test('the matcher itself', async (t) => {
  t.ok(matchesRoute('/v1/decisions/{id}'), 'a parameter of another name')
  t.ok(matchesRoute('/v1/market/BTC'), 'a concrete value')
  t.notOk(matchesRoute('/v1/intelligence/nowhere'), 'an unknown path')
  t.notOk(matchesRoute('/v1/decisions/a/b/c'), 'too many segments')
})

t.test('every /v1 path in the repository documents is a registry route', async (t) => {
  const files = ['README.md', 'sql/README.md', 'notebooks/README.md', ...(await readdir(join(ROOT, 'docs'))).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)]
  let checked = 0
  for (const file of files) {
    for (const path of mentions(await readFile(join(ROOT, file), 'utf8'))) {
      checked++
      t.ok(matchesRoute(path), `${file}: ${path}`)
    }
  }
  t.ok(checked > 10, `checked ${checked} mentions`)
})

t.test('every /v1 path in the served discovery documents is a registry route', async (t) => {
  const s = await withServer(t)
  for (const doc of ['/llms.txt', '/llms-full.txt', '/.well-known/ai.txt', '/.well-known/agent.json', '/.well-known/x402.json', '/openapi.json', '/robots.txt']) {
    const text = await (await fetch(`${s.url}${doc}`)).text()
    const found = mentions(text)
    t.ok(found.length > 0 || doc === '/robots.txt', `${doc} names routes`)
    const wrong = found.filter((p) => !matchesRoute(p))
    t.same(wrong, [], `${doc}: every path is a route`)
  }
})
