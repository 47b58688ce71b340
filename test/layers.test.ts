/**
 * The house rule (DEVELOPERS.md, README Architecture): layers are top-level folders and dependencies point one way.
 *
 *   common → ingest → pipeline → models → engine → sql → record → product → serving → app → cli
 *
 * A file may import its own layer and any layer to its left, never one to its right. On top of the order:
 * - models/ is pure: no logger, no clock, no environment, no file system, no network (the same inputs give the same
 *   answer, on the service and in `svc eval` alike);
 * - process.env is read only by the composition root (app/) and the command line (cli/): library code takes its
 *   settings as options;
 * - a product domain (product/<domain>/) reaches another only through that domain's public face, never its internals,
 *   and reacts to resolutions through the outcome bus;
 * - bench/ measures the product as shipped: it imports no test helper (the protocol peers both use, such as the
 *   local x402 facilitator, live in peers/);
 * - test/ may import anything; no layer imports test/, bench/ or peers/, except that a `svc dev` command
 *   (cli/commands/dev-*.ts) runs a protocol peer for a developer's machine, and imports it only with import() when it
 *   runs (the peers' packages are devDependencies, and `svc --help` loads every command).
 * Every import is read from the source text (static, re-exports and dynamic import()), so a wrong arrow fails here
 * before it can land.
 */
import t from 'tap'
import { dirname, join, normalize } from 'node:path'
import { sourceTexts } from './helpers/sources.ts'

/** The layers, lowest first. */
export const LAYERS = ['common', 'ingest', 'pipeline', 'models', 'engine', 'sql', 'record', 'product', 'serving', 'app', 'cli'] as const

const IMPORT = /(?:^|[^\w.])(?:import|export)\s+(?:type\s+)?(?:[\w*{}\s,$]+\s+from\s+)?['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g

interface Edge {
  from: string
  to: string
  dynamic: boolean
}

/** The import edges and texts of every shipped source, read once for all the checks below. */
const graph: Promise<{ edges: Edge[]; files: Map<string, string> }> = sourceTexts().then((texts) => {
  const out: Edge[] = []
  for (const [from, text] of texts) {
    for (const m of text.matchAll(IMPORT)) {
      const spec = m[1] ?? m[2]!
      if (!spec.startsWith('.')) continue
      out.push({ from, to: normalize(join(dirname(from), spec)), dynamic: m[2] !== undefined })
    }
  }
  return { edges: out, files: new Map(texts) }
})
const edges = () => graph

/** The `svc dev` commands: the one arrow from a layer into peers/. */
const DEV_COMMAND = /^cli\/commands\/dev-[^/]+\.ts$/

const rank = (path: string): number => LAYERS.indexOf(path.split('/')[0] as (typeof LAYERS)[number])

t.test('imports point from a layer to itself or a lower one, never upward', async (t) => {
  const { edges: all } = await edges()
  t.ok(all.length > 300, `read ${all.length} imports`)
  const wrong = all.filter((e) => rank(e.from) >= 0 && rank(e.to) > rank(e.from)).map((e) => `${e.from} → ${e.to}`)
  t.same(wrong, [], 'no upward arrow')
})

t.test('bench measures the shipped product: no test helper; the service imports no test, bench or peer', async (t) => {
  const { edges: all } = await edges()
  const wrong = all.filter((e) => e.from.startsWith('bench/') && e.to.startsWith('test/')).map((e) => `${e.from} → ${e.to}`)
  t.same(wrong, [], 'bench imports nothing from test/ (shared protocol peers live in peers/)')
  const devPeer = (e: Edge) => DEV_COMMAND.test(e.from) && e.to.startsWith('peers/') && e.dynamic
  const leaks = all.filter((e) => rank(e.from) >= 0 && /^(test|bench|peers)\//.test(e.to) && !devPeer(e)).map((e) => `${e.from} → ${e.to}`)
  t.same(leaks, [], 'no layer imports test/, bench/ or peers/ (a svc dev command: peers/, with import() only)')
  t.ok(all.some(devPeer), 'svc dev facilitator runs the local facilitator from peers/')
})

t.test('models are pure: no logger, clock, environment, file system or network', async (t) => {
  const { edges: all, files } = await edges()
  const wrong: string[] = []
  for (const e of all) if (e.from.startsWith('models/') && e.to === 'common/logger.ts') wrong.push(`${e.from} imports the logger`)
  for (const [file, text] of files) {
    if (!file.startsWith('models/')) continue
    const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '')
    for (const [what, re] of [
      ['reads the environment', /process\.env/],
      ['reads the wall clock', /Date\.now\(|performance\.now\(|new Date\(\)/],
      ['touches the file system or network', /from\s+['"]node:(fs|fs\/promises|net|http|https|dgram)['"]|fetch\(/],
    ] as const) {
      if (re.test(code)) wrong.push(`${file} ${what}`)
    }
  }
  t.same(wrong, [], 'models/ is pure')
})

t.test('only the composition root and the command line read process.env', async (t) => {
  const { files } = await edges()
  const wrong: string[] = []
  for (const [file, text] of files) {
    const top = file.split('/')[0]
    if (top === 'app' || top === 'cli' || top === 'bench' || top === 'bin') continue
    const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '')
    if (/process\.env/.test(code)) wrong.push(file)
  }
  t.same(wrong, [], 'no library file reads process.env')
})

t.test('a product domain reaches another only through its public face', async (t) => {
  const { edges: all } = await edges()
  const domainOf = (p: string) => (p.startsWith('product/') ? p.split('/')[1]! : null)
  const wrong = all
    .filter((e) => {
      const a = domainOf(e.from)
      const b = domainOf(e.to)
      // The public face of a domain is its index.ts; platform (health) is shared infrastructure of every domain.
      return a !== null && b !== null && a !== b && !e.to.endsWith('/index.ts') && b !== 'platform'
    })
    .map((e) => `${e.from} → ${e.to}`)
  t.same(wrong, [], 'no cross-domain reach into internals')
})

t.test('the check itself catches a wrong arrow', async (t) => {
  t.ok(rank('serving/Server.ts') > rank('product/billing/pricing.ts'), 'serving sits above product')
  t.ok(rank('engine/EngineRunner.ts') > rank('models/Dataset.ts'), 'engine sits above models')
  const parsed = [...`import { x } from '../serving/Server.ts'\nexport type { Y } from './y.ts'\nconst z = await import('../a/b.ts')`.matchAll(IMPORT)].map((m) => m[1] ?? m[2])
  t.same(parsed, ['../serving/Server.ts', './y.ts', '../a/b.ts'], 'static, re-export and dynamic imports are all read')
})
