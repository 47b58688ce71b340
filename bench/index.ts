/**
 * `npm run bench`, part 1: the log, pipeline, payments and engine benchmarks, each printed beside a baseline measured in
 * the same run (ratios, because this machine is shared and noisy). Kafka figures need KAFKA_BROKERS (bench/run.sh
 * starts a broker, and stops it before part 2, bench/serving-report.ts, so the broker's JVM does not share the two
 * cores with the latency measurements).
 */
import { benchLogs } from './logs.ts'
import { benchPipeline } from './pipeline.ts'
import { benchEngine } from './engine.ts'
import { benchPayments } from './payments.ts'
import { benchRecord } from './record.ts'
import { benchRelease } from './release.ts'
import { benchArena } from './arena.ts'
import { benchDelivery } from './delivery.ts'
import { benchVenue } from './venue.ts'
import { benchAnswers } from './answers.ts'
import { benchStreams } from './streams.ts'

const print = (line: string) => process.stdout.write(line + '\n')
const brokers = process.env.KAFKA_BROKERS ? process.env.KAFKA_BROKERS.split(',') : null
const fmt = (n: number) => Math.round(n).toLocaleString('en-US')

print('== backbone: raw log speed (produce + consume, no processing)')
const raw = await benchLogs({ records: 100_000, ...(brokers ? { kafkaBrokers: brokers } : { skipKafka: true }), print: () => undefined })
for (const r of raw) {
  print(`${r.name.padEnd(34)} produce ${fmt(r.produceRecordsPerSec)} rec/s   consume ${r.consumeRecordsPerSec === null ? '-' : fmt(r.consumeRecordsPerSec)} rec/s`)
}

print('\n== backbone: end to end, tape → log → Parquet (sealed + committed)')
const e2e = await benchPipeline({ hours: 72, kafkaBrokers: brokers, print })
print('')
for (const r of e2e) {
  const base = raw.find((x) => x.name.toLowerCase().startsWith(r.log))
  if (!base || base.consumeRecordsPerSec === null) continue
  const rawBoth = 1 / (1 / base.produceRecordsPerSec + 1 / base.consumeRecordsPerSec)
  print(
    `${r.log.padEnd(8)} end-to-end ${fmt(r.ticksPerSec)} ticks/s vs raw log produce+consume ${fmt(rawBoth)} rec/s → ratio ${(r.ticksPerSec / rawBoth).toFixed(2)}`,
  )
}

print('\n== payments: paid decisions through POST /v1/decisions (model evaluation, debit + decision + receipt in one durable unit) vs free decision reads, same client, same run')
await benchPayments({ calls: 3000, concurrencies: [16, 64], x402Calls: 300, print })

print('\n== engine: decisions evaluated and appended to the ledger (OKX SOL tape, batches of 200 per durable send)')
const engineRuns = await benchEngine({ kafkaBrokers: brokers })
const modelOnly = engineRuns[0]!
for (const r of engineRuns) {
  print(`${r.name.padEnd(44)} ${fmt(r.decisionsPerSec)} decisions/s (${r.decisions})   ratio to model only ${(r.decisionsPerSec / modelOnly.decisionsPerSec).toFixed(2)}`)
}

print('\n== signed answers: the answer key\'s EIP-191 signature of a served decision record beside its JCS serialization alone and a SHA-256 of it, same records, same run')
await benchAnswers({ records: Number(process.env.ANSWER_BENCH_RECORDS ?? 2000), print })

print('\n== measured record: the full batch build (calibration, decomposition, index, priors, a curve point) vs one DuckDB MSE pass over the same Parquet, same run')
await benchRecord({ decisions: Number(process.env.RECORD_BENCH_DECISIONS ?? 10_000_000), perFile: 200_000, print })

print('\n== releases: svc release evaluate over the OKX tapes (rebuild from the dataset hash, holdout scoring, four gates) vs one svc eval of the same tapes and split, same run (goal ≤ 2)')
await benchRelease({ print }).catch((err: unknown) => print(`release bench failed: ${String(err)}`))

print('\n== arena: rebuild of a population (payers, calls) and the profile and leaderboard reads beside the decision read, same server, same run (goal ≥ 0.5)')
// A failure here is printed, not thrown: the figures above are already out.
await benchArena({ payers: Number(process.env.ARENA_BENCH_PAYERS ?? 100_000), calls: Number(process.env.ARENA_BENCH_CALLS ?? 1_000_000), print }).catch((err: unknown) => print(`arena bench failed: ${String(err)}`))

print('\n== delivery: resolutions fanned out to 1,000 registered outcome hook endpoints on a local receiver (guard, signature, pinned client, durable attempt row each) vs the same signed POSTs from the same client alone, same run')
await benchDelivery({ resolutions: Number(process.env.DELIVERY_BENCH_RESOLUTIONS ?? 500), print }).catch((err: unknown) => print(`delivery bench failed: ${String(err)}`))

print('\n== live venue: Hyperliquid websocket frames (LocalVenue at 1x, replayed as fast as they go) through the connector into durable ticks on the embedded log vs a bare websocket client reading the same frames, same server, same run (goal ≥ 0.5); memory over 30 minutes of venue time replayed at 60x, read after full collections')
await benchVenue({ hours: Number(process.env.VENUE_BENCH_HOURS ?? 6), print }).catch((err: unknown) => print(`venue bench failed: ${String(err)}`))

print('\n== live streams: resolutions reaching 10,000 WebSocket subscribers of /v1/streams/feed vs the same resolutions found by 10,000 clients polling /v1/feed each second, same server, same run (delivery delay p50/p99, server and client CPU side by side)')
await benchStreams({ subscribers: Number(process.env.STREAMS_BENCH_SUBSCRIBERS ?? 10_000), print }).catch((err: unknown) => print(`streams bench failed: ${String(err)}`))
