/**
 * The simulated venue's checkpoint (issue 31: a restart generates only the gap, not the history): for random minute
 * boundaries, several seeds and asset sets, the checkpoint taken there, serialized as the service keeps it (JSON with
 * pipeline/state/jsonNumbers.ts markers) and parsed back, resumes with exactly the records a run from the origin
 * yields after it: the same line numbers, event times and bytes of tickLine.
 */
import t from 'tap'
import { Prng } from '../../ingest/Prng.ts'
import { SimulatedVenue, type VenueCheckpoint } from '../../ingest/SimulatedVenue.ts'
import type { TapeEntry } from '../../ingest/TapeReader.ts'
import type { CanonicalAsset } from '../../ingest/Tick.ts'
import { decodeNumbers, encodeNumbers } from '../../pipeline/state/jsonNumbers.ts'
import { seeded } from '../helpers/stateSnapshots.ts'

const MINUTE = 60_000
const ORIGIN = Date.parse('2026-02-03T04:05:00Z')
/** Minutes of the reference run from the origin (a day and a half: regime changes, hourly funding, bursts). */
const RUN_MINUTES = 36 * 60
/** Minutes compared after each checkpoint. */
const AFTER_MINUTES = 90

/** The checkpoint as it goes through a file: JSON text (−Infinity and −0 kept by the markers), then parsed back. */
function roundTrip(checkpoint: VenueCheckpoint): VenueCheckpoint {
  return decodeNumbers(JSON.parse(JSON.stringify(encodeNumbers(checkpoint)))) as VenueCheckpoint
}

interface Line {
  line: number
  time: number
  raw: string
}

function take(entries: Iterable<TapeEntry>, untilTime: number): Line[] {
  const out: Line[] = []
  for (const e of entries) {
    if (e.time > untilTime) break
    out.push({ line: e.line, time: e.time, raw: e.raw })
  }
  return out
}

t.test('Prng: words() and fromWords() go on draw for draw', async (t) => {
  const a = new Prng(42, 'x')
  for (let i = 0; i < 1000; i++) a.float()
  const b = Prng.fromWords(a.words())
  t.same(Array.from({ length: 64 }, () => b.nextUint32()), Array.from({ length: 64 }, () => a.nextUint32()))
  t.throws(() => Prng.fromWords([0, 0, 0, 0]), /all be zero/)
  t.throws(() => Prng.fromWords([1, 2, 3, 2 ** 32]), /unsigned 32-bit/)
})

const CASES: Array<{ seed: number; assets: CanonicalAsset[] }> = [
  { seed: 1, assets: ['BTC', 'ETH', 'SOL'] },
  { seed: 7, assets: ['SOL', 'BTC'] },
  { seed: 2_024, assets: ['ETH'] },
  { seed: 99_991, assets: ['BTC', 'SOL', 'ETH'] },
]

for (const { seed, assets } of CASES) {
  t.test(`seed ${seed}, ${assets.join('+')}: a checkpoint round-trip resumes byte-identically`, async (t) => {
    const venue = new SimulatedVenue({ seed, assets, originMs: ORIGIN })
    const checkpoints: VenueCheckpoint[] = []
    const full = take(venue.entries({ onCheckpoint: (c) => void checkpoints.push(c) }), ORIGIN + RUN_MINUTES * MINUTE)
    t.equal(full.length, full.at(-1)!.line, 'the reference run is numbered from 1 without gaps')
    t.ok(checkpoints.length >= RUN_MINUTES, `one checkpoint per minute (${checkpoints.length})`)

    // Random minutes, plus the states that are easy to get wrong: a burst in progress, a pending price push, the
    // minute before an hour's funding.
    const rnd = seeded(seed)
    const chosen = new Set<number>(Array.from({ length: 8 }, () => 1 + Math.floor(rnd() * (RUN_MINUTES - AFTER_MINUTES - 1))))
    const burst = checkpoints.findIndex((c) => c.market.assets.some((a) => a.burstIntensity > 0 && a.pendingPush !== 0))
    if (burst >= 0 && burst < RUN_MINUTES - AFTER_MINUTES) chosen.add(checkpoints[burst]!.market.minute)
    chosen.add(59 - (new Date(ORIGIN).getUTCMinutes() % 60))
    const minutes = [...chosen].sort((a, b) => a - b)

    for (const minute of minutes) {
      const kept = checkpoints[minute - 1]!
      t.equal(kept.market.minute, minute)
      const from = roundTrip(kept)
      t.equal(venue.checkpointProblem(from), null, `minute ${minute}: the parsed checkpoint is this venue's`)
      const until = ORIGIN + (minute + AFTER_MINUTES) * MINUTE
      const resumed = take(venue.entries({ from }), until)
      const expected = full.filter((l) => l.line > from.market.ticks && l.time <= until)
      t.ok(resumed.length > 0 && resumed.length === expected.length, `minute ${minute}: ${resumed.length} records after line ${from.market.ticks}`)
      const firstDiff = resumed.findIndex((l, i) => l.line !== expected[i]!.line || l.time !== expected[i]!.time || l.raw !== expected[i]!.raw)
      t.equal(firstDiff, -1, `minute ${minute}: the same lines, times and bytes as the run from the origin`)
      t.ok(resumed[0]!.time > ORIGIN + minute * MINUTE, 'nothing up to the checkpoint minute is generated again')
    }
    if (burst >= 0) t.pass(`a checkpoint inside a liquidation burst was resumed (minute ${checkpoints[burst]!.market.minute})`)
  })
}

t.test('a checkpoint of another venue, or a damaged one, is refused with the reason', async (t) => {
  const venue = new SimulatedVenue({ seed: 3, assets: ['BTC', 'ETH'], originMs: ORIGIN })
  let checkpoint: VenueCheckpoint | null = null
  for (const e of venue.entries({ onCheckpoint: (c) => void (checkpoint = c) })) if (e.time >= ORIGIN + 10 * MINUTE) break
  const good = roundTrip(checkpoint!)
  t.equal(venue.checkpointProblem(good), null)
  t.match(venue.checkpointProblem({ ...good, seed: 4 }), /seed 4, this venue's is 3/)
  t.match(venue.checkpointProblem({ ...good, origin: '2026-02-03T04:06:00.000Z' }), /origin/)
  t.match(venue.checkpointProblem({ ...good, assets: ['BTC'] }), /assets/)
  t.match(venue.checkpointProblem({ ...good, market: { ...good.market, schema: 0 } }), /schema 0/)
  t.match(venue.checkpointProblem({ ...good, market: { ...good.market, market: [0, 0, 0, 0] } }), /\/market/)
  t.match(venue.checkpointProblem({ ...good, market: { ...good.market, assets: [{ ...good.market.assets[0]!, premium: 'x' }, good.market.assets[1]] } }), /\/assets\/0\/premium/)
  t.match(venue.checkpointProblem(null), /not an object/)
  t.throws(() => venue.entries({ from: { ...good, seed: 4 } }).next(), /SimulatedVenue checkpoint: seed 4/)
})

t.test('a tape id names its seed and origin: parseTapeId reads them back, and nothing from another tape', async (t) => {
  const venue = new SimulatedVenue({ seed: 7, assets: ['BTC', 'ETH', 'SOL'], originMs: Date.parse('2026-11-26T13:37:00.000Z') })
  t.equal(venue.tapeId, 'sim-s7-20261126T133700Z')
  t.same(SimulatedVenue.parseTapeId(venue.tapeId), { seed: 7, originMs: venue.originMs })
  t.equal(SimulatedVenue.parseTapeId('okx_swap_1h_2023_2026'), null, 'a recorded tape is not a simulated venue')
  t.equal(SimulatedVenue.parseTapeId('sim-s7-20261399T133700Z'), null, 'an impossible date')
})
