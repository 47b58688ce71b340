/**
 * The decision engine over a real tape (OKX SOL-USDT-SWAP 1 h bars + 8 h funding, 2026-03-01 → 2026-07-15), on both
 * logs, through the real ledger topics and the Parquet sink:
 * - every refusal kind is reachable and recorded with probability 0 and confidence 0; an account-scoped question with
 *   no wallet provider is PROVIDER_DOWN and records nothing;
 * - identical inputs re-serve the recorded decision (same id, no new row);
 * - replay is deterministic; a bad pin is VALIDATION; a missing or tampered journal is REPLAY_INPUT_LOST;
 * - a conflicting record with a recorded decision_id is refused by the engine, and the `decisions` view keeps the first;
 * - next decision while the clock is open is CLOCK_OPEN;
 * - the S06 window whose only settlement is missing resolves unresolvable (never not);
 * - a restart writes no second decision or outcome.
 */
import t from 'tap'
import { EngineServices } from '../../engine/EngineServices.ts'
import type { SaleGate } from '../../models/saleGate.ts'
import { jcsSha256 } from '../../common/hash.ts'
import { BINARY_METHOD_V2 } from '../../models/questions/BinaryQuestion.ts'
import { soldMarketQuestions } from '../../models/questions/index.ts'
import { MeasuredRecord } from '../../record/MeasuredRecord.ts'
import { RecordDb } from '../../record/RecordDb.ts'
import { RecordJob } from '../../record/RecordJob.ts'
import { calibrationReport } from '../../models/verification/calibrationReport.ts'
import { brierScore } from '../../models/verification/brier.ts'
import { bandSumsOf, classBandSumsOf, distributionScoresFromBands, poolScores, scoresFromBands, type ClassBandSums } from '../../models/verification/bucketSums.ts'
import { wilsonInterval } from '../../models/verification/wilson.ts'
import { randomUUID } from 'node:crypto'
import { tickTime } from '../../ingest/Tick.ts'
import type { EventLog } from '../../pipeline/log/EventLog.ts'
import { Pipeline } from '../../pipeline/Pipeline.ts'
import { encodeDecision, decisionKey, type LedgerDecision } from '../../pipeline/records/decisionRecord.ts'
import { topicNames } from '../../pipeline/topics.ts'
import { EngineRunner } from '../../engine/EngineRunner.ts'
import { EngineError } from '../../engine/EngineError.ts'
import { Catalog, withCatalog } from '../../sql/Catalog.ts'
import { forEachLog, type TapTest } from '../helpers/logs.ts'
import { makeTempDir } from '../helpers/tmp.ts'
import { decideNow, nextDecisionNow, produceTicks, solTicksBetween } from '../helpers/engine.ts'
import { sealedReleaseOf, withFamily } from '../helpers/release.ts'

const HOUR = 3_600_000
const TRAIN_UNTIL = Date.parse('2026-06-20T00:00:00Z')
/** The 08:00 settlement of 2026-07-10 is removed: the S06 clock (00:00, 08:00] has no settlement in its window. */
const DROPPED_SETTLEMENT = Date.parse('2026-07-10T08:00:00Z')
const S06_CLOCK_AT = '2026-07-10T00:00:00.000Z'

/**
 * The topic's summed end offsets once they stopped moving. On Kafka a transactional append (a unit of work) also
 * writes a commit marker, which the coordinator adds after the commit returns, so an offset read right after a
 * unit may not count it yet; no test here appends while it measures.
 */
async function total(log: EventLog, topic: string): Promise<number> {
  const read = async () => (await log.endOffsets(topic)).reduce((a, b) => a + b, 0)
  let last = await read()
  for (;;) {
    await new Promise((r) => setTimeout(r, 250))
    const now = await read()
    if (now === last) return now
    last = now
  }
}

async function until(cond: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 20))
  }
}

function refusal(t: TapTest, d: LedgerDecision, kind: string, what: string): void {
  t.equal(d.decision, kind, `${what}: decision ${kind}`)
  t.equal(d.action, 'refuse', `${what}: action refuse`)
  t.equal(d.probability, 0, `${what}: probability 0`)
  t.equal(d.confidence, 0, `${what}: confidence 0`)
}

t.test('primedAt: the first cadence instant after every sold question resolved its first clock past the cut', async (t) => {
  // Horizons 60 m (S01), 240 m (S03..S05), 480 m (S06, S07), grace 5 min, cadence step 1 h. A cut at 00:01 gives the
  // first 480 m decisions at 08:00, resolved past 16:05: svc start paces from 17:00.
  t.equal(EngineRunner.primedAt(Date.parse('2026-01-31T00:01:00Z')), Date.parse('2026-01-31T17:00:00Z'))
  t.equal(EngineRunner.primedAt(Date.parse('2026-01-31T00:00:00Z')), Date.parse('2026-01-31T09:00:00Z'), 'a cut on the 8 h grid decides there')
  t.equal(EngineRunner.primedAt(Date.parse('2026-01-31T00:01:00Z'), Date.parse('2026-01-31T10:00:00Z')), Date.parse('2026-01-31T17:00:00Z'), 'resuming before it changes nothing')
  t.equal(EngineRunner.primedAt(Date.parse('2026-01-31T00:01:00Z'), Date.parse('2026-01-31T17:01:00Z')), Date.parse('2026-01-31T18:00:00Z'), 'a restart catches up to the next instant after what it holds')
  t.equal(EngineRunner.primedAt(Date.parse('2026-01-31T00:01:00Z'), Date.parse('2026-01-31T18:00:00Z')), Date.parse('2026-01-31T19:00:00Z'), 'strictly after')
})

t.test('decision engine over a real tape', async (t) => {
  const ticks = (await solTicksBetween('2026-03-01', '2026-07-15')).filter((x) => !(x.kind === 'funding' && tickTime(x) === DROPPED_SETTLEMENT))
  const lastTick = tickTime(ticks[ticks.length - 1]!)

  await forEachLog(t, async (t, makeLog) => {
    const log = await makeLog()
    const dataDir = await makeTempDir(t)
    const names = topicNames()
    // The history up to just past the training cut first: the engine fits there (see 2.).
    const fitPart = ticks.filter((x) => tickTime(x) <= TRAIN_UNTIL + 1.5 * HOUR)
    await produceTicks(log, fitPart)
    const pipeline = await Pipeline.start({ dataDir, log, sink: { maxAgeMs: 500 } })
    t.teardown(() => pipeline.close())

    // 1. No release given: an API ask refuses insufficient_confidence, naming why (never a fit made here instead).
    const early = await EngineRunner.start({ log, dataDir, trainUntil: Date.parse('2030-01-01'), cadence: false, groupId: 'svc.engine-early' })
    await early.waitForTicks()
    const unfitted = await decideNow(early.engine, { question_id: 'S05_volatility_expansion', asset: 'SOL' })
    refusal(t, unfitted.record, 'insufficient_confidence', 'no active release')
    t.equal(unfitted.record.refusal_reason, 'no_active_release')
    t.equal(unfitted.record.release_version, null, 'the record says no release answered it')
    const noRelease = await new EngineServices(early).signals()
    t.same(noRelease.release, { version: null, checksum: null, checksum_verified: null, jev_version: null, families: {} })
    t.ok(noRelease.questions.filter((q) => soldMarketQuestions().some((m) => m.id === q.question_id)).every((q) => !q.available && q.reason === 'no_active_release'), '/v1/signals: every sold market question blocked, no_active_release')
    await early.close()

    // 2. The engine proper: serving a release fitted on the window before TRAIN_UNTIL, cadence decisions after it.
    let offset = 0
    const clock = { now: () => lastTick + offset }
    // S06 on 2.5 months of OKX 8 h funding has too few decisions for the sale gate to measure (holdout_below_floor),
    // so it would refuse every decision; the checks below need an S06 claim in a window without a settlement. The
    // release carries the same fit as if the gate had sold it (its own content-hashed version, so replay and lineage
    // stay exact), sealed under its own checksum.
    const sealed = await sealedReleaseOf(fitPart, TRAIN_UNTIL)
    const s06Fit = sealed.body.families.S06_funding_anomaly!.fitted
    t.match(s06Fit.params, { status: 'ok', sale_gate: { status: 'blocked', reason: 'holdout_below_floor' } }, 'S06 blocked by the sale gate as fitted')
    const soldParams = { ...s06Fit.params, sale_gate: { ...(s06Fit.params.sale_gate as object), status: 'sold', reason: null } }
    const release = withFamily(sealed, { ...s06Fit, params: soldParams, version: `${BINARY_METHOD_V2}@${jcsSha256(soldParams).slice(0, 12)}` })
    let runner = await EngineRunner.start({ log, dataDir, trainUntil: TRAIN_UNTIL, clock, release })
    await runner.waitForTicks()
    await produceTicks(log, ticks.slice(fitPart.length))
    await runner.waitForTicks()
    const engine = () => runner.engine

    // The sale gate in GET /v1/signals: each fitted question's verdict for SOL with its figures; a blocked one is
    // unavailable with the measured reason, and every decision on it refuses with that reason.
    const catalog = await new EngineServices(runner).signals()
    let blockedSeen = 0
    for (const q of soldMarketQuestions()) {
      const entry = catalog.questions.find((e) => e.question_id === q.id)!
      const gate = engine().fittedFor(q.id)!.params.sale_gate as SaleGate
      t.match(entry.sale_gate, [{ asset: 'pooled', status: gate.status, reason: gate.reason, n_scored: gate.n_scored, bss: gate.bss }], `${q.id}: the gate's verdict per asset`)
      t.match(entry.sale_gate[0]!.measured, /scored decisions, BSS/)
      t.equal(entry.available, gate.status === 'sold', `${q.id}: ${gate.status}${gate.reason ? ` (${gate.reason})` : ''}`)
      if (gate.status === 'blocked') {
        blockedSeen++
        t.equal(entry.reason, `not_sold:${gate.reason}`)
        const asked = await decideNow(engine(), { question_id: q.id, asset: 'SOL' })
        refusal(t, asked.record, 'insufficient_confidence', `${q.id} blocked`)
        t.equal(asked.record.refusal_reason, `not_sold:${gate.reason}`)
      }
    }
    t.ok(blockedSeen > 0, `the gate blocks some question on 3.5 months of one asset (${blockedSeen})`)
    const stats = runner.stats()
    t.ok(stats.decisionsStaged > 500, `cadence decisions were made (${stats.decisionsStaged})`)
    t.ok(stats.outcomesStaged > 400, `clocks were resolved (${stats.outcomesStaged})`)
    t.ok(engine().ledger.index.decision(unfitted.record.decision_id), 'the earlier refusal is in the rebuilt index')

    // Refusal kinds.
    const suppressed = await decideNow(engine(), { question_id: 'S02_liquidation_risk', asset: 'SOL' })
    refusal(t, suppressed.record, 'suppress', 'unsold question')
    offset = 3 * 24 * HOUR
    const stale = await decideNow(engine(), { question_id: 'S05_volatility_expansion', asset: 'SOL' })
    refusal(t, stale.record, 'stale_input', 'inputs three days old')
    t.match(stale.record.refusal_reason, /^input_stale:/)
    offset = 0

    // PROVIDER_DOWN is an error, never a decision.
    const before = await total(log, names.decisions)
    const sizeBefore = engine().ledger.index.size.decisions
    await t.rejects(decideNow(engine(), { question_id: 'S09_wallet_state', asset: 'SOL', subject: '0x' + '1'.repeat(40) }), { code: 'PROVIDER_DOWN' })
    await t.rejects(decideNow(engine(), { question_id: 'S99_nope', asset: 'SOL' }), { code: 'VALIDATION' })
    await t.rejects(decideNow(engine(), { question_id: 'S05_volatility_expansion', asset: 'DOGE' }), { code: 'VALIDATION' })
    t.equal(await total(log, names.decisions), before, 'no row for PROVIDER_DOWN or a bad request')
    t.equal(engine().ledger.index.size.decisions, sizeBefore)

    // Identical inputs: same id, no new row.
    let claim: LedgerDecision | null = null
    for (const q of ['S05_volatility_expansion', 'S04_drawdown_risk', 'S03_trend_continuation', 'S01_market_regime']) {
      const r = await decideNow(engine(), { question_id: q, asset: 'SOL', payment: { payment_id: 'pay-1', rail: 'credits' } })
      if (r.record.action !== 'refuse') {
        claim = r.record
        break
      }
    }
    t.ok(claim, 'a fitted question makes a claim')
    const rowsAfterClaim = await total(log, names.decisions)
    const again = await decideNow(engine(), { question_id: claim!.question_id, asset: 'SOL', payment: { payment_id: 'pay-2', rail: 'x402' } })
    t.equal(again.record.decision_id, claim!.decision_id, 'identical inputs → the same decision_id')
    t.ok(again.reserved, 're-served')
    t.equal(again.record.payment_id, 'pay-1', 'the recorded row, unchanged')
    t.equal(await total(log, names.decisions), rowsAfterClaim, 'no new row')
    // The answer as built (before any read-back from the log) holds the regime's classes by name, the order the record
    // has when decoded (canonical JSON), so the instance that answered and a replica serve one text; the model lists
    // them trend_up, trend_down, range_quiet, range_volatile.
    const regimeAnswer = (await decideNow(engine(), { question_id: 'S01_market_regime', asset: 'SOL', payment: { payment_id: 'pay-3', rail: 'credits' } })).record
    t.ok(regimeAnswer.choice, `S01 answers with a distribution (${regimeAnswer.action})`)
    t.same(Object.keys(regimeAnswer.choice?.distribution ?? {}), ['range_quiet', 'range_volatile', 'trend_down', 'trend_up'], 'its classes by name')
    t.same(runner.reads.resolution(claim!.decision_id), { status: 'pending', decision_id: claim!.decision_id, horizon_end: claim!.horizon_end }, 'pending before the horizon')

    // Next decision while the clock is open.
    await t.rejects(nextDecisionNow(engine(), claim!.decision_id, null), { code: 'CLOCK_OPEN' })
    offset = Date.parse(claim!.horizon_end) - lastTick
    const next = await nextDecisionNow(engine(), claim!.decision_id, null)
    t.ok(next && next.record.decision_id !== claim!.decision_id, 'after horizon_end the next decision is made')
    t.equal(next!.record.question_id, claim!.question_id)
    t.equal(await nextDecisionNow(engine(), randomUUID(), null), null, 'unknown previous id → null')
    offset = 0

    // Replay: deterministic under the recorded policy and the pinned one; a bad pin is VALIDATION.
    const s06 = [...engine().ledger.index.allDecisions()].find((d) => d.question_id === 'S06_funding_anomaly' && d.created_at === S06_CLOCK_AT)
    t.ok(s06, 'the S06 cadence decision of the gap window exists')
    let replayed = 0
    for (const d of engine().ledger.index.allDecisions()) {
      const r = runner.replayer.replay(d.decision_id, { ruleset_version: null })!
      if (r.replayed_verdict === d.decision) replayed++
    }
    t.equal(replayed, engine().ledger.index.size.decisions, 'every recorded decision replays to its verdict')
    t.same(runner.replayer.replay(s06!.decision_id, { ruleset_version: '1.0.0' }), {
      decision_id: s06!.decision_id,
      original_verdict: s06!.decision,
      replayed_verdict: s06!.decision,
      matched_rules: s06!.matched_rules,
      policy_version: 'policy-1.0.0',
      deterministic: true,
    })
    t.throws(() => runner.replayer.replay(s06!.decision_id, { ruleset_version: '9.9.9' }), { code: 'VALIDATION' })
    t.equal(runner.replayer.replay(randomUUID(), { ruleset_version: null }), null)

    // S06 window with no settlement → unresolvable, never not.
    t.not(s06!.action, 'refuse', 'the S06 decision is a claim')
    const o = engine().ledger.index.outcome(s06!.decision_id)
    t.equal(o?.outcome, 'unresolvable', 'resolved unresolvable')
    t.equal(o?.statistic, null)
    t.match(runner.reads.resolution(s06!.decision_id), { status: 'resolved', outcome: 'unresolvable' })

    // Tampered and missing journals (written past the engine, straight onto the log).
    const producer = await log.createProducer()
    t.teardown(() => producer.close())
    const snap = JSON.parse(s06!.journal!) as { features: Record<string, number | null> }
    snap.features.funding_z = 99
    const tampered: LedgerDecision = { ...s06!, decision_id: randomUUID(), journal: JSON.stringify(snap) }
    const lost: LedgerDecision = { ...s06!, decision_id: randomUUID(), journal: null }
    const conflicting: LedgerDecision = { ...s06!, probability: 0.99, decision: 'likely' }
    const conflictsBefore = engine().ledger.index.conflicts
    await producer.send(names.decisions, [tampered, lost, conflicting].map((d) => ({ key: decisionKey(d), value: encodeDecision(d), timestamp: Date.parse(d.created_at) })))
    await until(() => engine().ledger.index.decision(tampered.decision_id) !== null && engine().ledger.index.decision(lost.decision_id) !== null && engine().ledger.index.conflicts > conflictsBefore)
    t.throws(() => runner.replayer.replay(tampered.decision_id, { ruleset_version: null }), { code: 'REPLAY_INPUT_LOST', detail: { reason: 'journal_hash_mismatch' } })
    t.throws(() => runner.replayer.replay(lost.decision_id, { ruleset_version: null }), { code: 'REPLAY_INPUT_LOST', detail: { reason: 'journal_missing' } })
    t.match(runner.reads.lineage(tampered.decision_id)!.verify, { input_ok: false, state_ok: true })
    t.match(runner.reads.lineage(lost.decision_id)!.verify, { input_ok: 'unknown' })
    t.match(runner.reads.lineage(s06!.decision_id.slice(0, 13))!.verify, { input_ok: true, state_ok: true }, 'lineage by prefix verifies')

    // The engine refuses a conflicting record; the index kept the first.
    t.throws(() => engine().ledger.stageDecision(conflicting), EngineError)
    t.throws(() => engine().ledger.stageDecision(conflicting), { code: 'LEDGER_CONFLICT' })
    t.equal(runner.reads.getDecision(s06!.decision_id)!.probability, s06!.probability, 'the recorded row is unchanged')

    // Restart: same ticks, same ids; nothing new is written.
    const dBefore = await total(log, names.decisions)
    const oBefore = await total(log, names.outcomes)
    await runner.close()
    runner = await EngineRunner.start({ log, dataDir, trainUntil: TRAIN_UNTIL, clock, release })
    t.teardown(() => runner.close())
    await runner.waitForTicks()
    t.equal(await total(log, names.decisions), dBefore, 'restart wrote no decision row')
    t.equal(runner.stats().decisionsStaged, 0)
    // Only the two clocks appended past the engine after its tick stream ended get resolved now; nothing twice.
    t.equal(await total(log, names.outcomes), oBefore + 2, 'restart resolved only the two clocks that had no outcome')
    t.ok(runner.ledger.index.outcome(tampered.decision_id) && runner.ledger.index.outcome(lost.decision_id))
    t.equal(runner.stats().outcomesStaged, 2)

    // Parquet: refusals recorded with zeros; the conflicting record sits in decision_rows, the view keeps the first.
    await pipeline.drain(names.decisions)
    await pipeline.drain(names.outcomes)
    await Catalog.apply(dataDir)
    await withCatalog(dataDir, { readOnly: true }, async (c) => {
      for (const id of [unfitted.record.decision_id, suppressed.record.decision_id, stale.record.decision_id]) {
        t.match(await c.query(`SELECT decision, probability, confidence, action FROM decisions WHERE decision_id = $id`, { id }), [{ probability: 0, confidence: 0, action: 'refuse' }])
      }
      t.same(await c.query(`SELECT count(*) AS n FROM decision_rows WHERE decision_id = $id`, { id: s06!.decision_id }), [{ n: '2' }], 'both records are on the ledger')
      t.same(await c.query(`SELECT probability FROM decisions WHERE decision_id = $id`, { id: s06!.decision_id }), [{ probability: s06!.probability }], 'the view keeps the first')
      t.same(await c.query(`SELECT outcome, statistic FROM outcomes WHERE decision_id = $id`, { id: s06!.decision_id }), [{ outcome: 'unresolvable', statistic: null }])
      const [n] = await c.query(`SELECT count(*) AS n FROM decisions`)
      t.equal(Number(n!.n), runner.ledger.index.size.decisions, 'the decisions view holds one row per indexed decision')
    })

    // The measured record's batch job over the same sealed Parquet (record/RecordJob.ts): priors, calibration and the
    // snapshot equal what the ledger index gives when counted directly.
    const recordDb = await RecordDb.open(dataDir)
    t.teardown(() => recordDb.close())
    const job = await RecordJob.open(recordDb)
    t.teardown(() => job.close())
    const firstRun = await job.run()
    t.equal(firstRun.held_files, 0, 'every outcome found its decision')
    t.equal((await job.run()).idle, true, 'a rerun over the same files writes nothing')
    const record = new MeasuredRecord(recordDb)
    const index = runner.ledger.index
    const realizedOf = (qid: string | null) =>
      index.feed(Number.MAX_SAFE_INTEGER).filter((o) => {
        const d = index.decision(o.decision_id)
        return (qid === null || o.question_id === qid) && o.outcome !== 'unresolvable' && d !== null && d.action !== 'refuse'
      })
    const pairOf = (o: { decision_id: string; outcome: string; realized_choice: string | null }) => {
      const d = index.decision(o.decision_id)!
      return { p: d.probability, y: d.choice ? (o.realized_choice === d.choice.choice_id ? 1 : 0) : o.outcome === 'obtains' ? 1 : 0 }
    }
    // Priors (spec Computation rule 5): base rates counted independently from the ledger index.
    const priors = new Map((await record.priors()).map((p) => [p.question_id, p]))
    // Every question the sale gate sold here has realized claims; a blocked one refuses (no claim to count).
    const claimed = soldMarketQuestions().map((q) => q.id).filter((qid) => realizedOf(qid).length > 0)
    t.ok(claimed.includes('S01_market_regime'), `questions with realized claims: ${claimed.join(', ')}`)
    for (const qid of claimed) {
      const realized = realizedOf(qid)
      const prior = priors.get(qid)!
      t.ok(realized.length > 0 && prior.prior, `${qid} has a prior`)
      t.equal(prior.prior!.n, realized.length, `${qid}: n = realized claims`)
      t.equal(prior.prior!.successes, realized.filter((o) => pairOf(o).y === 1).length, `${qid}: successes = obtains`)
      t.equal(prior.prior!.verdict, realized.length >= 30 ? 'published' : 'insufficient_sample')
      const ci = wilsonInterval(prior.prior!.successes, prior.prior!.n)!
      t.same(prior.prior!.interval, [ci.lower, ci.upper], `${qid}: Wilson 95% interval`)
      const cal = await record.calibration({ question_id: qid, subject: 'SOL' })
      const direct = calibrationReport(realized.map(pairOf))
      t.same(cal.buckets.map((b) => b.n), direct.buckets.map((b) => b.n), `${qid}: calibration band counts from the tables = from the pairs`)
      cal.buckets.forEach((b, i) => {
        const want = direct.buckets[i]!
        t.ok(b.published === want.published && (b.mean_predicted === null ? want.mean_predicted === null : Math.abs(b.mean_predicted - want.mean_predicted!) < 1e-12), `${qid} band ${i}: mean predicted`)
      })
    }
    const regime = priors.get('S01_market_regime')!
    t.equal(Object.values(regime.label_histogram!).reduce((a, b) => a + b.count, 0), regime.prior!.n, 'S01 label histogram covers every realized outcome')
    t.equal(priors.get('S08_basis_dislocation')!.prior, null, 'no prior without outcomes')
    t.equal(priors.get('S08_basis_dislocation')!.reason, 'not_sold_on_deployment')
    // The snapshot: Brier, log loss and the decomposition of every realized claim, from the band sums; S01 (a
    // distribution question) by its whole distribution, its modal-class pairs the secondary view.
    const { snapshot, chain_verified } = await record.intelligence()
    const all = realizedOf(null).map(pairOf)
    t.equal(snapshot!.evidence.n_realized, all.length, 'n_realized = realized claims')
    t.ok(Math.abs(snapshot!.modal_class!.brier! - brierScore(all)!) < 1e-12, 'modal-class Brier from the tables = from the pairs')
    const binary = realizedOf(null).filter((o) => !index.decision(o.decision_id)!.choice)
    const distributions = realizedOf(null).filter((o) => index.decision(o.decision_id)!.choice).map((o) => ({ q: o.question_id, distribution: index.decision(o.decision_id)!.choice!.distribution, realized: o.realized_choice! }))
    t.ok(distributions.length > 0 && distributions.every((x) => x.realized !== null), `${distributions.length} realized S01 decisions, each with its realized class`)
    const byClass = new Map<string, ClassBandSums[]>()
    for (const x of distributions) byClass.set(x.q, [...(byClass.get(x.q) ?? []), ...classBandSumsOf([x])])
    const want = poolScores([scoresFromBands(bandSumsOf(binary.map(pairOf))), ...[...byClass.values()].map(distributionScoresFromBands)])!
    t.ok(Math.abs(snapshot!.components.brier! - want.brier) < 1e-12, `Brier from the tables = from the ledger (${snapshot!.components.brier})`)
    t.ok(Math.abs(snapshot!.components.reliability! - want.reliability) < 1e-12 && Math.abs(snapshot!.components.resolution! - want.resolution) < 1e-12, 'REL and RES as the decomposition over the shared deciles')
    // S01's Brier as served is the multi-class Brier Σ_k (p_k − o_k)² of its distributions, averaged over decisions.
    const s01 = distributions.filter((x) => x.q === 'S01_market_regime')
    const multiclass = s01.reduce((sum, x) => sum + Object.entries(x.distribution).reduce((a, [k, p]) => a + (p - (k === x.realized ? 1 : 0)) ** 2, 0), 0) / s01.length
    const s01Cal = await record.calibration({ question_id: 'S01_market_regime', subject: null })
    t.equal(s01Cal.scores?.scored_as, 'distribution')
    t.ok(Math.abs(s01Cal.scores!.brier - multiclass) < 1e-12, `S01 multi-class Brier ${s01Cal.scores!.brier} = ${multiclass} over ${s01.length} decisions`)
    t.equal(snapshot!.evidence.n_decisions, index.size.decisions, 'n_decisions = decisions on the ledger')
    t.ok(chain_verified, 'the chain verifies')
  })
})
