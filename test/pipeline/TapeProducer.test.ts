/**
 * The tape producer's warm-up (svc start): history before `paceFrom` goes into the log at full speed, then the replay
 * is paced, with one onPaceStart once everything before it is durable; records carry the tape line as written; a
 * restart finds the newest tick already replayed and resumes after it without a duplicate. Over both logs.
 */
import t from 'tap'
import { join } from 'node:path'
import { tickLine, type Tick } from '../../ingest/Tick.ts'
import { TapeWriter } from '../../ingest/TapeWriter.ts'
import { decodeTickValue } from '../../pipeline/TickEnvelope.ts'
import { newestReplayedTime, produceTape, tapeIdOf } from '../../pipeline/TapeProducer.ts'
import { forEachLog, readAll } from '../helpers/logs.ts'
import { makeTempDir } from '../helpers/tmp.ts'
import { simulatedMid } from '../helpers/ticks.ts'

const T0 = Date.parse('2026-01-01T00:00:00Z')
const MINUTE = 60_000

const mid = simulatedMid

t.test('paceFrom: full-speed history, then paced; resume after the newest tick without duplicates', async (t) => {
  const dir = await makeTempDir(t)
  const tape = join(dir, 'tape.ndjson')
  // Two hours of history a minute apart (at speed 60 that would take two minutes), then 90 paced event-seconds.
  const ticks: Tick[] = []
  for (let ms = 0; ms <= 2 * 60 * MINUTE + 90_000; ms += ms < 2 * 60 * MINUTE ? MINUTE : 15_000) ticks.push(mid('BTC', T0 + ms, 1 + ms), mid('ETH', T0 + ms, 2 + ms))
  const writer = TapeWriter.open(tape)
  for (const tick of ticks) await writer.write(tick)
  await writer.close()
  const paceFrom = T0 + 2 * 60 * MINUTE
  const history = ticks.filter((x) => Date.parse(x.provenance.timestamp) < paceFrom).length

  await forEachLog(t, async (t, makeLog) => {
    const log = await makeLog()
    await log.ensureTopics([{ name: 'ticks', partitions: 3 }])
    const tapeId = await tapeIdOf(tape)
    t.equal(await newestReplayedTime(log, 'ticks', tapeId), null, 'nothing replayed yet')

    const started = performance.now()
    const paceStarts: { produced: number; eventTime: number; inLog: number; at: number }[] = []
    const first = await produceTape({
      log,
      topic: 'ticks',
      tape,
      speed: 60,
      paceFrom,
      onPaceStart: ({ produced, eventTime }) => {
        const at = performance.now() - started
        void log.endOffsets('ticks').then((ends) => paceStarts.push({ produced, eventTime, inLog: ends.reduce((a, b) => a + b, 0), at }))
      },
    })
    const took = performance.now() - started
    await new Promise((r) => setTimeout(r, 50))
    t.equal(paceStarts.length, 1, 'onPaceStart once')
    t.same({ produced: paceStarts[0]!.produced, eventTime: paceStarts[0]!.eventTime }, { produced: history, eventTime: paceFrom }, 'pacing starts after the history')
    // Counted asynchronously after the callback, so paced records sent meanwhile (a busy broker) may be in it too.
    t.ok(paceStarts[0]!.inLog >= history, `the history is durable when pacing starts (${paceStarts[0]!.inLog} ≥ ${history} in the log)`)
    // Pacing is anchored when the first paced record comes due, just before the history's last send (and this callback).
    t.ok(took - paceStarts[0]!.at >= 1_500 - 200, `then 90 event-seconds paced (${(took - paceStarts[0]!.at).toFixed(0)} ms at speed 60)`)
    t.equal(first.produced, ticks.length)

    const records = await readAll(log, 'ticks')
    const lines = new Map(ticks.map((x, i) => [i + 1, tickLine(x)]))
    t.ok(
      records.every((r) => r.value.toString() === `{"seq":${decodeTickValue(r.value).seq},"tape":"${tapeId}","tick":${lines.get(decodeTickValue(r.value).seq!)}}`),
      'each record is the envelope of its tape line',
    )
    t.equal(await newestReplayedTime(log, 'ticks', tapeId), Date.parse(ticks.at(-1)!.provenance.timestamp), 'the newest tick replayed')
    t.equal(await newestReplayedTime(log, 'ticks', 'another-tape'), null, 'only ticks of this tape count')

    const again = await produceTape({ log, topic: 'ticks', tape, speed: 60, paceFrom })
    t.same({ produced: again.produced, skipped: again.skipped }, { produced: 0, skipped: ticks.length }, 'a restart appends nothing twice')
  })
})
