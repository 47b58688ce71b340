/**
 * GET /record in a real browser: Debian's chromium driven by playwright-core opens the page served by a real server
 * over a real record (synthetic resolved ledger in Parquet, four batch-job runs, a release store of real Parquet), reads
 * every figure back from the page's data-* attributes and checks it equals the JSON the API serves for the same read
 * (GET /v1/intelligence, /v1/intelligence/curve, /v1/calibration?question_id=…, /v1/intelligence/releases); the
 * consistency bars equal models/verification/consistency.ts on the API's n and mean; interpolated text is escaped; the
 * page loads nothing but itself and runs no script; a full-page screenshot is taken.
 *
 * Needs chromium (CHROMIUM_PATH, default /usr/bin/chromium). Without it the test skips locally and fails under CI=true,
 * where .ci/run installs it.
 */
import t from 'tap'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Browser } from 'playwright-core'
import { chromiumMissing, launchChromium } from '../../helpers/chromium.ts'
import { writeSyntheticLedger } from '../../../bench/syntheticLedger.ts'
import { consistencyInterval } from '../../../models/verification/consistency.ts'
import type { QuestionModel } from '../../../models/QuestionModel.ts'
import { MeasuredRecord } from '../../../record/MeasuredRecord.ts'
import { RecordDb } from '../../../record/RecordDb.ts'
import { RecordJob } from '../../../record/RecordJob.ts'
import type { ReleaseBody } from '../../../record/releases/body.ts'
import { GATES, type Evaluation, type GateName, type GateVerdict } from '../../../record/releases/evaluate.ts'
import { ReleaseStore } from '../../../record/releases/ReleaseStore.ts'
import { DataTimeline } from '../../../product/platform/DataTimeline.ts'
import { withServer } from '../../helpers/serving/server.ts'
import { makeTempDir } from '../../helpers/tmp.ts'
import type { TapTest } from '../../helpers/logs.ts'

/** A label with every character HTML escapes: it must come out as text, never as markup. */
const HOSTILE_LABEL = `S03 <b class="x">bold</b> & 'quotes' "too"`
const QIDS = ['S03_synthetic', 'S04_synthetic', 'S05_synthetic', 'S06_synthetic', 'S07_synthetic']
/** A distribution question (S01's shape): scored by its distribution, its modal class the secondary view. */
const DIST = { question_id: 'S01_synthetic', classes: ['trend_up', 'trend_down', 'range_volatile', 'range_quiet'] } as const
const QUESTIONS = [
  ...QIDS.map((id, i) => ({ id, label: i === 0 ? HOSTILE_LABEL : id, answer: 'probability', sold: true, horizonMs: 4 * 3_600_000 }) as unknown as QuestionModel),
  { id: DIST.question_id, label: DIST.question_id, answer: 'choice', classes: DIST.classes, sold: true, horizonMs: 4 * 3_600_000 } as unknown as QuestionModel,
]
const SECTIONS = [...QIDS, DIST.question_id]

/** A record with a curve of four points: runs over 1,500 decisions, then 600 more three times. */
async function buildRecord(t: TapTest, dataDir: string): Promise<MeasuredRecord> {
  let clock = Date.parse('2026-11-24T00:00:00Z')
  const now = () => clock
  const db = await RecordDb.open(dataDir)
  t.teardown(() => db.close())
  // The duel's crowd line as the composition root hands it over (its own test is test/record/crowdBenchmark.test.ts).
  const job = await RecordJob.open(db, { questions: QUESTIONS, now, crowd: () => ({ brier: 0.2125, n: 40, house_brier: 0.1875 }) })
  t.teardown(() => job.close())
  let first = 0
  for (const decisions of [1500, 600, 600, 600]) {
    await writeSyntheticLedger(dataDir, { decisions, perFile: 300, firstRow: first, distribution: DIST })
    first += decisions
    await job.run()
    clock += 3_600_000
  }
  return new MeasuredRecord(db, { questions: QUESTIONS, now })
}

const HASH = 'd'.repeat(64)
const releaseBody = (version: string, parent: string | null): ReleaseBody => ({
  version,
  parent,
  method: { name: 'v2', jev_version: 'jev-2.0.0' },
  families: {},
  dataset: { window_start: '2026-01-01T00:00:00.000Z', window_end: '2026-01-20T00:00:00.000Z', n_realized: 1234, dataset_hash: HASH },
  code: { jev_version: 'jev-2.0.0', policy_version: 'policy-3.0.0', policy_checksum: 'e'.repeat(64), fit_code: 'f'.repeat(64) },
})
const evaluation: Evaluation = {
  folds: [{ fold: 1, window_start: '2026-01-20T00:00:00.000Z', window_end: '2026-01-25T00:00:00.000Z', n_realized: 400, delta_brier: -0.0123, delta_logloss: -0.02 }],
  incumbent: { version: null, kind: 'base_rate' },
  delta_brier: -0.0123,
  delta_brier_ci: [-0.02, -0.004],
  delta_logloss: -0.02,
  delta_logloss_ci: [-0.03, -0.01],
  per_family: {},
  holdout: { window_start: '2026-01-20T00:00:00.000Z', window_end: null, n_decisions: 420, n_realized: 400 },
  bootstrap: { method: 'percentile, whole UTC days', seed: 1, resamples: 2000, level: 0.95 },
  candidate_checksum: HASH,
}
const allGates = (failing: GateName | null) =>
  Object.fromEntries(GATES.map((g) => [g, g === failing ? { met: false, measured: { n: 1 }, reason: 'below the floor' } : { met: true, measured: { n: 1 } }])) as unknown as Record<GateName, GateVerdict>

async function buildReleases(t: TapTest, dir: string): Promise<ReleaseStore> {
  const store = await ReleaseStore.open(dir)
  t.teardown(() => store.close())
  await store.putRelease(releaseBody('1.0.0', null), '2026-02-01T00:00:00.000Z')
  await store.putEvaluation('1.0.0', { evaluation, families: {} }, allGates(null), '2026-02-02T00:00:00.000Z')
  await store.activate('1.0.0', '2026-02-03T00:00:00.000Z')
  await store.putRelease(releaseBody('1.1.0', '1.0.0'), '2026-02-04T00:00:00.000Z')
  await store.putEvaluation('1.1.0', { evaluation, families: {} }, allGates('improvement'), '2026-02-05T00:00:00.000Z')
  return store
}

const missing = await chromiumMissing()
if (missing !== null) {
  if (process.env.CI === 'true') t.fail(`CI=true requires the track-record page browser test: ${missing}`)
  else t.test('GET /record in headless Chromium', { skip: missing }, async () => {})
} else {
  t.test('GET /record in headless Chromium: the page shows exactly the API figures', async (t) => {
    const dir = await makeTempDir(t, 'svc-record-page-')
    const record = await buildRecord(t, join(dir, 'data'))
    const releases = await buildReleases(t, join(dir, 'releases'))
    // The simulated venue in the present, as `svc start` wires it: the page must say so where a reader looks first.
    const dataTime = new DataTimeline({ mode: 'present', source: 'simulated', simulated: true, speed: 1, eventTime: () => Date.parse('2026-11-24T03:00:00Z'), clock: { now: () => Date.parse('2026-11-24T03:00:30Z') } })
    dataTime.markWarm()
    const server = await withServer(t, { services: { record, ladder: record, releases, dataTime } })
    const api = async (path: string) => ((await (await fetch(server.url + path)).json()) as { data: any }).data

    const browser: Browser = await launchChromium()
    t.teardown(() => browser.close())
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } })
    const requested: string[] = []
    page.on('request', (r) => requested.push(r.url()))
    const response = await page.goto(`${server.url}/record`, { waitUntil: 'load' })
    t.equal(response?.status(), 200)
    t.equal(response?.headers()['content-type'], 'text/html; charset=utf-8')
    t.match(response?.headers()['content-security-policy'], /default-src 'none'/, 'a CSP that forbids every external load')
    t.same(requested, [`${server.url}/record`], 'the page loads nothing but itself (no CDN, no asset)')
    t.equal(await page.locator('script').count(), 0, 'no script')

    // Every data-* figure is JSON; read them in the page.
    const attr = async (selector: string, name: string) => JSON.parse((await page.locator(selector).first().getAttribute(name))!) as unknown
    const all = async (selector: string, names: string[]) =>
      page.locator(selector).evaluateAll((els, ns) => els.map((el) => Object.fromEntries(ns.map((n) => [n, JSON.parse(el.getAttribute(n)!)]))), names)

    await t.test('a visible SIMULATED banner above the title, from the data-time object every answer carries', async (t) => {
      const banner = page.locator('.banner')
      t.equal(await banner.count(), 1)
      t.ok(await banner.isVisible(), 'visible')
      t.match(await banner.innerText(), /^SIMULATED The built-in market generator, running in the present; not a real market/)
      t.same(await attr('.banner', 'data-data-time'), dataTime.status(), 'the data-time object itself')
      const box = (await banner.boundingBox())!
      const title = (await page.locator('h1').boundingBox())!
      t.ok(box.height > 20 && box.y < title.y, `above the title (banner at y ${box.y}, title at y ${title.y})`)
    })

    await t.test('the index: composite, every component, the evidence with its window', async (t) => {
      const intel = await api('/v1/intelligence')
      const s = intel.snapshot
      t.ok(s, 'the API has a snapshot')
      t.equal(await attr('[data-index="composite"]', 'data-value'), s.composite, `composite ${s.composite}`)
      t.equal(await attr('[data-index="index_version"]', 'data-value'), s.index_version)
      t.equal(await attr('[data-chain-verified]', 'data-chain-verified'), intel.chain_verified)
      const components = Object.fromEntries((await all('[data-component]', ['data-component', 'data-value'])).map((r) => [r['data-component'], r['data-value']]))
      t.same(components, s.components, 'components equal the API, to the last bit')
      const evidence = Object.fromEntries((await all('[data-evidence]', ['data-evidence', 'data-value'])).map((r) => [r['data-evidence'], r['data-value']]))
      t.same(evidence, s.evidence, 'n and window equal the API')
      t.ok(s.evidence.window_start && s.evidence.window_end, 'a window is shown')
      t.equal(await attr('[data-benchmark="reference_brier"]', 'data-value'), s.benchmarks.reference_brier)
      t.ok(s.benchmarks.crowd, 'the snapshot has a crowd line')
      t.equal(await attr('[data-benchmark="crowd"]', 'data-value'), s.benchmarks.crowd.brier, 'the crowd Brier')
      t.equal(await attr('[data-benchmark="crowd"]', 'data-n'), s.benchmarks.crowd.n, 'over its n graded calls')
      t.equal(await attr('[data-benchmark="crowd_house"]', 'data-value'), s.benchmarks.crowd.house_brier, 'beside the house on the same calls')
      t.equal(await attr('[data-index="row_hash"]', 'data-value'), s.row_hash)
      t.same(
        (await all('[data-secondary="modal_class"]', ['data-value', 'data-skill', 'data-ece']))[0],
        { 'data-value': s.modal_class.brier, 'data-skill': s.modal_class.skill_vs_reference, 'data-ece': s.modal_class.ece },
        'the secondary modal-class view equals the API',
      )
    })

    await t.test('the learning curve: every point and the fit', async (t) => {
      const curve = await api('/v1/intelligence/curve')
      t.ok(curve.points.length >= 3, `${curve.points.length} points`)
      const shown = await all('[data-chart="curve"] circle[data-n-cum]', ['data-n-cum', 'data-brier', 'data-taken-at'])
      t.same(
        shown.map((p) => [p['data-n-cum'], p['data-brier'], p['data-taken-at']]),
        curve.points.filter((p: any) => p.n_cum > 0 && p.brier !== null).map((p: any) => [p.n_cum, p.brier, p.taken_at]),
        'points (n_cum, brier) equal the API',
      )
      t.equal(await attr('[data-curve="points"]', 'data-value'), curve.points.length)
      if (curve.fit) {
        const fit = await all('polyline[data-fit]', ['data-a', 'data-b', 'data-c', 'data-b-ci'])
        t.same(fit, [{ 'data-a': curve.fit.a, 'data-b': curve.fit.b, 'data-c': curve.fit.c, 'data-b-ci': curve.fit.b_ci }], 'the fit line is the API fit')
      } else {
        t.equal(await page.locator('polyline[data-fit]').count(), 0, 'no fit, no line')
      }
      t.equal((await page.locator('[data-curve="note"]').textContent())?.trim(), curve.note)
    })

    await t.test('reliability diagrams: per question, published bands plotted, counts for all, consistency bars', async (t) => {
      const sections = await all('section.question', ['data-question-id'])
      t.same(sections.map((s) => s['data-question-id']), SECTIONS, 'one section per question')
      let plotted = 0
      for (const qid of SECTIONS) {
        const cal = await api(`/v1/calibration?question_id=${qid}`)
        const scope = `section.question[data-question-id='"${qid}"']`
        t.equal(await attr(scope, 'data-calibration-n'), cal.n, `${qid}: n`)
        const counts = await all(`${scope} tr[data-bucket]`, ['data-n', 'data-published'])
        t.same(counts, cal.buckets.map((b: any) => ({ 'data-n': b.n, 'data-published': b.published })), `${qid}: every band's count and published flag`)
        const bands = await all(`${scope} [data-chart="reliability"] g.band`, ['data-lo', 'data-hi', 'data-n', 'data-mean-predicted', 'data-realized-frequency', 'data-consistency-lower', 'data-consistency-upper'])
        const published = cal.buckets.filter((b: any) => b.published)
        t.same(
          bands,
          published.map((b: any) => {
            const bar = consistencyInterval(b.n, b.mean_predicted)!
            return {
              'data-lo': b.lo, 'data-hi': b.hi, 'data-n': b.n, 'data-mean-predicted': b.mean_predicted, 'data-realized-frequency': b.realized_frequency,
              'data-consistency-lower': bar.lower, 'data-consistency-upper': bar.upper,
            }
          }),
          `${qid}: only the ${published.length} published bands are plotted, at the API's figures`,
        )
        plotted += bands.length
        t.equal(await attr(scope, 'data-buckets-grade'), cal.buckets_grade, `${qid}: what the buckets grade (${cal.buckets_grade})`)
        t.same(
          (await all(`${scope} [data-scores]`, ['data-scores', 'data-brier', 'data-skill', 'data-n']))[0],
          { 'data-scores': cal.scores.scored_as, 'data-brier': cal.scores.brier, 'data-skill': cal.scores.skill_vs_reference, 'data-n': cal.scores.n },
          `${qid}: scored as ${cal.scores.scored_as}, Brier and skill as the API`,
        )
        const classRows = await all(`${scope} tr[data-class]`, ['data-class', 'data-class-bucket', 'data-n', 'data-published'])
        t.same(
          classRows,
          (cal.classes ?? []).flatMap((c: any) => c.buckets.map((b: any, i: number) => ({ b, i })).filter(({ b }: any) => b.n > 0)
            .map(({ b, i }: any) => ({ 'data-class': c.class, 'data-class-bucket': i, 'data-n': b.n, 'data-published': b.published }))),
          `${qid}: per-class bands as the API (${classRows.length})`,
        )
      }
      const s01 = await api(`/v1/calibration?question_id=${DIST.question_id}`)
      t.equal(s01.buckets_grade, 'modal_class', 'the distribution question: buckets grade its modal class')
      t.equal(s01.scores.scored_as, 'distribution', 'and it is scored by its distribution')
      t.same(s01.classes.map((c: any) => c.class), DIST.classes, 'one-vs-rest per class')
      t.ok(plotted > 0, `${plotted} bands plotted`)
    })

    await t.test('release history: the feed as the API lists it', async (t) => {
      const feed = (await api('/v1/intelligence/releases')).releases
      const rows = await all('tr[data-release-version]', ['data-release-version', 'data-status', 'data-delta-brier'])
      t.same(rows, feed.map((r: any) => ({ 'data-release-version': r.version, 'data-status': r.status, 'data-delta-brier': r.evaluation?.delta_brier ?? null })))
      t.same(rows.map((r) => r['data-status']), ['active', 'rejected'])
    })

    await t.test('interpolated text is escaped', async (t) => {
      const h3 = page.locator(`section.question[data-question-id='"S03_synthetic"'] h3`)
      t.match(await h3.textContent(), HOSTILE_LABEL, 'the label reads as typed')
      t.equal(await h3.locator('b').count(), 0, 'and makes no element')
    })

    await t.test('a full-page screenshot', async (t) => {
      const png = join(dir, 'record.png')
      await page.screenshot({ path: png, fullPage: true })
      const bytes = await readFile(png)
      t.ok(bytes.length > 10_000, `${bytes.length} bytes`)
      t.same([...bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'a PNG')
      if (process.env.SVC_SCREENSHOT_DIR) await page.screenshot({ path: join(process.env.SVC_SCREENSHOT_DIR, 'record.png'), fullPage: true })
    })
  })

  t.test('without a release store or a snapshot the page still renders and says so', async (t) => {
    const dir = await makeTempDir(t, 'svc-record-page-empty-')
    const db = await RecordDb.open(dir)
    t.teardown(() => db.close())
    const server = await withServer(t, { services: { record: new MeasuredRecord(db, { questions: QUESTIONS }) } })
    const browser = await launchChromium()
    t.teardown(() => browser.close())
    const page = await browser.newPage()
    t.equal((await page.goto(`${server.url}/record`))?.status(), 200)
    t.equal((await page.locator('[data-releases="none"]').textContent())?.trim(), 'No release yet.')
    t.equal(await page.locator('[data-snapshot="none"]').count(), 1, 'no snapshot yet')
    t.equal(await page.locator('[data-curve="empty"]').count(), 1, 'no curve to plot')
    t.equal(await page.locator('g.band').count(), 0, 'nothing plotted')
  })
}
