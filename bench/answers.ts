/**
 * The cost of signing an answer (issue 29, `npm run bench`: "the cost of signing a record in µs"): the deployment key's
 * EIP-191 signature over JCS({ record, signed_at }) of a decision record as served, beside the JCS serialization
 * alone and a SHA-256 of it, measured on the same records in the same run; and the recovery POST /v1/verify does, and
 * a re-served (frozen) record, whose signature is kept beside it.
 *
 * `node --import tsx bench/answers.ts [records=2000]`
 */
import { createHash } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { decisionIdOf } from '../engine/identity.ts'
import { openAnswerKeyring } from '../record/answerKeys/answerKeyFile.ts'
import { checkAnswerSignature, signedTextOf } from '../record/answerKeys/answerSignature.ts'
import type { AnswerSignature } from '../record/schemas.ts'

export interface AnswerBenchResult {
  records: number
  jcsUs: number
  sha256Us: number
  signUs: number
  recoverUs: number
  cachedUs: number
}

/** A decision record of the served shape (S01's, with a choice distribution and conditions), distinct per i. */
function recordOf(i: number): Record<string, unknown> & { decision_id: string; created_at: string } {
  const identity = { question_id: 'S01_market_regime', asset: 'BTC', subject: null, input_hash: createHash('sha256').update(String(i)).digest('hex'), policy_version: 'policy-3.0.0' }
  const p = 0.3 + (i % 500) / 1000
  return {
    decision_id: decisionIdOf(identity), ...identity,
    event: 'BTC perp market regime over the next 60 minutes', horizon: '60m',
    horizon_end: '2026-11-27T13:00:00.000Z', created_at: '2026-11-27T12:00:00.000Z',
    conditions: { staleness: 'venue data within staleness budget', realized_vol_1h: 0.0041 + i / 1e7, funding_8h: 0.0001 },
    probability: p, confidence: 0.4, decision: 'trend_up', action: 'inform',
    state_hash: 'cd'.repeat(32), jev_version: '0.3.0',
    choice: { choice_id: 'trend_up', distribution: { trend_up: p, range: (1 - p) / 2, trend_down: (1 - p) / 2 } },
  }
}

const perRecordUs = (ms: number, n: number) => (ms * 1000) / n

export async function benchAnswers(o: { records: number; print: (line: string) => void }): Promise<AnswerBenchResult> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-answers-'))
  try {
    const keyring = await openAnswerKeyring({ dataDir: dir, now: Date.now })
    const records = Array.from({ length: o.records }, (_, i) => recordOf(i))
    const signedAt = new Date().toISOString()
    // Warm every path once (JIT, viem's lazy curve tables) before timing.
    for (const r of records.slice(0, 50)) {
      createHash('sha256').update(signedTextOf(r, signedAt)).digest('hex')
      await checkAnswerSignature(r, await keyring.sign({ ...r }), keyring.keys)
    }
    let t0 = performance.now()
    let bytes = 0
    for (const r of records) bytes += signedTextOf(r, signedAt).length
    const jcsMs = performance.now() - t0
    t0 = performance.now()
    for (const r of records) createHash('sha256').update(signedTextOf(r, signedAt)).digest('hex')
    const shaMs = performance.now() - t0
    // Fresh (unfrozen) records: nothing is cached, every call signs.
    const sigs: AnswerSignature[] = []
    t0 = performance.now()
    for (const r of records) sigs.push(await keyring.sign(r))
    const signMs = performance.now() - t0
    t0 = performance.now()
    for (let i = 0; i < records.length; i++) {
      if (!(await checkAnswerSignature(records[i]!, sigs[i]!, keyring.keys)).ok) throw new Error('a signature did not verify')
    }
    const recoverMs = performance.now() - t0
    const frozen = records.map((r) => Object.freeze(r))
    for (const r of frozen) await keyring.sign(r)
    t0 = performance.now()
    for (const r of frozen) keyring.sign(r)
    const cachedMs = performance.now() - t0
    const n = records.length
    const res: AnswerBenchResult = {
      records: n,
      jcsUs: perRecordUs(jcsMs, n),
      sha256Us: perRecordUs(shaMs, n),
      signUs: perRecordUs(signMs, n),
      recoverUs: perRecordUs(recoverMs, n),
      cachedUs: perRecordUs(cachedMs, n),
    }
    const f = (us: number) => `${us.toFixed(1)} µs`
    o.print(`records ${n} (JCS text ${Math.round(bytes / n)} bytes each)`)
    o.print(`JCS({ record, signed_at }) alone        ${f(res.jcsUs)} per record`)
    o.print(`JCS + SHA-256                            ${f(res.sha256Us)} per record`)
    o.print(`JCS + EIP-191 sign (answer key, viem)    ${f(res.signUs)} per record   → ${(res.signUs / res.sha256Us).toFixed(0)}× JCS + SHA-256`)
    o.print(`recover + window check (POST /v1/verify) ${f(res.recoverUs)} per record`)
    o.print(`re-served frozen record (kept signature) ${f(res.cachedUs)} per record`)
    return res
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await benchAnswers({ records: Number(process.argv[2] ?? 2000), print: (l) => process.stdout.write(l + '\n') })
}
