/**
 * The recorder (REST polls + websocket, merged in event-time order) against the local replay server, written to a
 * real tape file and read back with readTape. The CLI wrapper is tested in test/cli/commands/tape-record.test.ts.
 */
import t from 'tap'
import { join } from 'node:path'
import { HyperliquidRecorder } from '../../../ingest/hyperliquid/HyperliquidRecorder.ts'
import { TapeWriter } from '../../../ingest/TapeWriter.ts'
import { readTape } from '../../../ingest/TapeReader.ts'
import type { Tick } from '../../../ingest/Tick.ts'
import { withReplayServer } from '../../helpers/HyperliquidReplayServer.ts'
import { makeTempDir } from '../../helpers/tmp.ts'

t.test('records polls and stream into an ordered, valid tape', async (t) => {
  const server = await withReplayServer(t, { wsIntervalMs: 50 })
  const dir = await makeTempDir(t)
  const file = join(dir, 'live.ndjson')
  const writer = TapeWriter.open(file)
  const late: Tick[] = []
  const rec = await HyperliquidRecorder.start({
    coins: ['BTC', 'ETH', 'SOL'],
    baseUrl: server.baseUrl,
    wsUrl: server.wsUrl,
    pollMs: 300,
    reorderWindowMs: 200,
    write: (tick) => writer.write(tick),
    late: async (tick) => {
      late.push(tick)
    },
  })
  server.injectFault('status500', 1, (b) => b.type === 'predictedFundings')
  await new Promise((r) => setTimeout(r, 1500))
  await rec.stop()
  await writer.close()

  const kinds = new Map<string, Set<string>>()
  let n = 0
  for await (const { tick } of readTape(file)) {
    n++
    const key = `${tick.kind}:${tick.provenance.provider}`
    if (!kinds.has(key)) kinds.set(key, new Set())
    kinds.get(key)!.add(tick.asset)
  }
  t.equal(n, rec.stats.written, 'every released tick is on the tape')
  t.equal(n + late.length, n + rec.stats.late)
  for (const k of ['mark', 'index', 'mid', 'open_interest', 'predicted_funding', 'book_top']) {
    t.same(kinds.get(`${k}:hyperliquid-info`), new Set(['BTC', 'ETH', 'SOL']), `${k} from REST for every coin`)
  }
  t.same(kinds.get('universe:hyperliquid-info'), new Set(['*']))
  for (const k of ['trade', 'book_top', 'mark', 'open_interest']) {
    t.same(kinds.get(`${k}:hyperliquid-ws`), new Set(['BTC', 'ETH', 'SOL']), `${k} from the stream for every coin`)
  }
  t.ok(rec.stats.polls >= 3, `polled ${rec.stats.polls} times`)
  t.equal(rec.stats.pollErrors, 1, 'the injected 500 was counted and polling went on')
})

t.test('a tick older than the written watermark goes to the late sink', async (t) => {
  const server = await withReplayServer(t)
  server.wsStreaming = false
  const written: Tick[] = []
  const late: Tick[] = []
  const rec = await HyperliquidRecorder.start({
    coins: ['DYDX'],
    baseUrl: server.baseUrl,
    wsUrl: server.wsUrl,
    pollMs: 200,
    reorderWindowMs: 0,
    write: async (tick) => {
      written.push(tick)
    },
    late: async (tick) => {
      late.push(tick)
    },
  })
  await new Promise((r) => setTimeout(r, 700))
  await rec.stop()
  // The recorded DYDX book is stamped 2023-07-17 while metaAndAssetCtxs ticks carry today's receive time: with a zero
  // window, books from later polls land behind the watermark.
  t.ok(late.length >= 1, `${late.length} late`)
  t.ok(late.every((x) => x.kind === 'book_top' && x.provenance.timestamp === '2023-07-17T21:43:23.930Z'))
  t.ok(written.every((x, i) => i === 0 || x.provenance.timestamp >= written[i - 1]!.provenance.timestamp), 'written in order')
  t.equal(rec.stats.late, late.length)
})
