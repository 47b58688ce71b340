/**
 * Importers against every recorded file in ../shared/tapes. Expected values are computed here, independently of
 * the importers, by parsing each source file with a few lines of code; the record counts are also checked against
 * the table in ../shared/tapes/README.md ("Rows").
 */
import t from 'tap'
import { createHash } from 'node:crypto'
import { mkdir, readFile, readdir, writeFile, access } from 'node:fs/promises'
import { join } from 'node:path'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { ImportError, IMPORTERS, importFiles, readSource, detectImporter } from '../../ingest/importers/index.ts'
import { TapeWriter } from '../../ingest/TapeWriter.ts'
import { TapeFormatError, readTape } from '../../ingest/TapeReader.ts'
import { TICK_JSON_SCHEMA, TICK_KINDS, type Tick } from '../../ingest/Tick.ts'
import { SHARED_DIR, makeTempDir } from '../helpers/tmp.ts'

const TAPES = join(SHARED_DIR, 'tapes')
const REPO = fileURLToPath(new URL('../../', import.meta.url))
const MIN = 60_000
const HOUR = 60 * MIN

type Kind = 'binance' | 'bybit' | 'okx-bar' | 'okx-funding' | 'hl-funding' | 'hl-universe'

interface Case {
  file: string
  kind: Kind
  /** Rows (bars, funding records) or captures (universe), from the README's "Rows" column. */
  readmeRecords: number
  format: string
  source: string
  asset: string
  instrument: string
  /** Bar length for bar files (from the README "Bar" row). */
  barMs?: number
}

// Known answers: ../shared/tapes/README.md (Rows, Bar, Venue / instrument).
const CASES: Case[] = [
  ...['BTC', 'ETH', 'SOL'].map((a): Case => ({ file: `binance_spot_1m_2024-Q4/${a}USDT_1m.csv`, kind: 'binance', readmeRecords: 50_000, format: 'binance-kline-csv', source: 'binance:spot', asset: a, instrument: `${a}USDT`, barMs: MIN })),
  ...['BTC', 'ETH', 'SOL'].map((a): Case => ({ file: `bybit_linear_5m_2025-04_07/${a}USDT_5m.csv`, kind: 'bybit', readmeRecords: 25_920, format: 'bybit-kline-csv', source: 'bybit:linear_perp', asset: a, instrument: `${a}USDT`, barMs: 5 * MIN })),
  ...['BTC', 'ETH', 'SOL'].map((a): Case => ({ file: `bybit_linear_5m_2025-04_07/${a}USDT_60m.csv`, kind: 'bybit', readmeRecords: 720, format: 'bybit-kline-csv', source: 'bybit:linear_perp', asset: a, instrument: `${a}USDT`, barMs: HOUR })),
  ...['BTC', 'ETH', 'SOL'].map((a): Case => ({ file: `okx_swap_1h_2023_2026/${a}-USDT-SWAP_1H.csv`, kind: 'okx-bar', readmeRecords: 31_917, format: 'okx-candles-csv', source: 'okx:swap', asset: a, instrument: `${a}-USDT-SWAP`, barMs: HOUR })),
  ...['BTC', 'ETH', 'SOL'].map((a): Case => ({ file: `okx_swap_1h_2023_2026/${a}-USDT-SWAP_funding_8h.csv`, kind: 'okx-funding', readmeRecords: 413, format: 'okx-funding-csv', source: 'okx:swap', asset: a, instrument: `${a}-USDT-SWAP` })),
  { file: 'hyperliquid_funding/SOL_fundingHistory_2025-01_2026-02.json', kind: 'hl-funding', readmeRecords: 9_807, format: 'hyperliquid-funding-json', source: 'hyperliquid:perp', asset: 'SOL', instrument: 'SOL' },
  { file: 'hyperliquid_funding/BTC_fundingHistory_2023-05_2023-07_from_sdk_cassette.json', kind: 'hl-funding', readmeRecords: 1_038, format: 'hyperliquid-funding-json', source: 'hyperliquid:perp', asset: 'BTC', instrument: 'BTC' },
  { file: 'hyperliquid_funding/universe_funding_mark_2026-02-04_2026-02-09.csv', kind: 'hl-universe', readmeRecords: 11, format: 'hyperliquid-universe-csv', source: 'hyperliquid:perp', asset: '*', instrument: '*' },
]

/** README: Hyperliquid BTC funding is "8-hourly until 2023-06-08 00:00, hourly after". */
const HL_HOURLY_FROM = Date.parse('2023-06-08T01:00:00Z')

interface Expected {
  count: number
  firstMs: number
  lastMs: number
  lines: string[]
}

const n = (s: string) => String(Number(s))

/** Expected projection computed straight from the source file. */
async function expectedFromSource(c: Case): Promise<Expected> {
  const text = await readFile(join(TAPES, c.file), 'utf8')
  let timed: { ms: number; line: string }[]
  if (c.kind === 'hl-funding') {
    const records = JSON.parse(text) as { fundingRate: string; premium: string; time: number }[]
    timed = records.map((r) => {
      const hourly = Math.floor(r.time / HOUR) * HOUR >= HL_HOURLY_FROM
      return { ms: r.time, line: `${r.time},${n(r.fundingRate)},${n(r.premium)},${hourly ? 1 : 8}` }
    })
  } else {
    const rows = text.trim().split('\n').slice(1).map((l) => l.split(','))
    if (c.kind === 'hl-universe') {
      const bySymbol = new Map<string, string[][]>()
      for (const r of rows) bySymbol.set(r[1]!, [...(bySymbol.get(r[1]!) ?? []), r])
      const delisted = (sym: string) => {
        const rs = bySymbol.get(sym)!
        return rs.every((r) => Number(r[2]) === 0) && new Set(rs.map((r) => Number(r[3]))).size === 1
      }
      const captures = [...new Set(rows.map((r) => r[0]!))]
      timed = captures.flatMap((cap) =>
        rows.filter((r) => r[0] === cap).map((r) => ({ ms: Date.parse(cap), line: `${Date.parse(cap)},${r[1]},${n(r[2]!)},${n(r[3]!)},${delisted(r[1]!)}` })),
      )
      const times = captures.map((cap) => Date.parse(cap))
      return { count: captures.length, firstMs: Math.min(...times), lastMs: Math.max(...times), lines: timed.map((x) => x.line) }
    }
    timed = rows.map((r) => {
      let ms: number
      if (c.kind === 'okx-funding') return { ms: Number(r[0]), line: `${Number(r[0])},${n(r[1]!)},null,8` }
      if (c.kind === 'binance') ms = Date.parse(r[0]!.replace(' ', 'T') + 'Z')
      else if (c.kind === 'bybit') ms = Date.parse(r[0]!.replace(' ', 'T'))
      else ms = Number(r[0])
      ms += c.barMs!
      return { ms, line: `${ms},${r.slice(1).map(n).join(',')}` }
    })
  }
  timed.sort((a, b) => a.ms - b.ms)
  return { count: timed.length, firstMs: timed[0]!.ms, lastMs: timed.at(-1)!.ms, lines: timed.map((x) => x.line) }
}

function projection(tick: Tick): string[] {
  const ms = Date.parse(tick.provenance.timestamp)
  switch (tick.kind) {
    case 'bar':
      return [`${ms},${tick.open},${tick.high},${tick.low},${tick.close},${tick.volume}`]
    case 'funding':
      return [`${ms},${tick.rate},${tick.premium},${tick.interval_hours}`]
    case 'universe':
      return tick.assets.map((a) => `${ms},${a.symbol},${a.funding},${a.mark},${a.delisted}`)
    default:
      throw new Error(`unexpected kind ${tick.kind}`)
  }
}

const sha256 = (lines: string[]) => createHash('sha256').update(lines.join('\n')).digest('hex')

async function writeTape(paths: string[], out: string, format?: string): Promise<void> {
  const { ticks } = await importFiles(paths, format === undefined ? {} : { format })
  const writer = TapeWriter.open(out)
  for (const tick of ticks) await writer.write(tick)
  await writer.close()
}

async function readAll(file: string): Promise<Tick[]> {
  const ticks: Tick[] = []
  for await (const entry of readTape(file)) ticks.push(entry.tick)
  return ticks
}

t.test('every shared tape file imports to the records its source describes', async (t) => {
  const dir = await makeTempDir(t)
  const found = (await readdir(TAPES, { recursive: true })).filter((f) => /\.(csv|json)$/.test(f)).sort()
  t.same(found, CASES.map((c) => c.file).sort(), 'the cases cover every recorded file in ../shared/tapes')

  for (const [i, c] of CASES.entries()) {
    await t.test(c.file, async (t) => {
      const path = join(TAPES, c.file)
      t.equal(detectImporter(await readSource(path)).id, c.format, 'format detected')
      const out = join(dir, `${i}.ndjson`)
      await writeTape([path], out)
      const ticks = await readAll(out) // readTape validates every record and refuses out-of-order times
      const expected = await expectedFromSource(c)

      t.equal(ticks.length, expected.count, 'record count matches the source')
      t.equal(ticks.length, c.readmeRecords, 'record count matches the README')
      t.equal(ticks[0]!.provenance.timestamp, new Date(expected.firstMs).toISOString(), 'first timestamp')
      t.equal(ticks.at(-1)!.provenance.timestamp, new Date(expected.lastMs).toISOString(), 'last timestamp')
      t.equal(sha256(ticks.flatMap(projection)), sha256(expected.lines), 'sha256 of the projection matches the source')

      const bad = ticks.filter((k) => k.asset !== c.asset || k.instrument !== c.instrument || k.provenance.source !== c.source || k.provenance.provider !== c.format || k.provenance.received_at !== k.provenance.timestamp)
      t.equal(bad.length, 0, `asset ${c.asset}, instrument ${c.instrument}, source ${c.source}, provider ${c.format}, received_at = timestamp`)
      const degraded = ticks.filter((k) => k.provenance.quality !== 'real')
      if (c.kind === 'bybit') {
        t.same(degraded, [ticks.at(-1)], 'only the latest Bybit bar (possibly still open) is degraded')
        t.equal(degraded[0]!.provenance.quality, 'degraded')
      } else {
        t.equal(degraded.length, 0, 'every record is quality real')
      }
      if (c.barMs !== undefined) {
        const units = new Set(ticks.map((k) => (k.kind === 'bar' ? `${k.volume_unit}/${k.interval}/${Date.parse(k.provenance.timestamp) - Date.parse(k.open_time)}` : k.kind)))
        const unit = c.kind === 'okx-bar' ? 'contracts' : 'base'
        const label = c.barMs === MIN ? '1m' : c.barMs === HOUR ? '1h' : '5m'
        t.same([...units], [`${unit}/${label}/${c.barMs}`], 'volume unit kept raw; timestamp = open_time + interval')
      }
    })
  }
})

t.test('Binance spot is never relabelled as a perp', async (t) => {
  const { ticks } = await importFiles([join(TAPES, 'binance_spot_1m_2024-Q4/SOLUSDT_1m.csv')])
  t.same([...new Set(ticks.map((k) => k.provenance.source))], ['binance:spot'])
  t.equal(IMPORTERS.find((i) => i.id === 'binance-kline-csv')!.source, 'binance:spot')

  // The same header without a venue in the path is not guessed as either Binance spot or a Bybit perp.
  const dir = await makeTempDir(t)
  const anon = join(dir, 'SOLUSDT_1m.csv')
  await writeFile(anon, 'timestamp,open,high,low,close,volume\n2024-10-01 03:00:00,1,2,0.5,1.5,10\n')
  await t.rejects(importFiles([anon]), { name: 'ImportError', message: /unrecognized source format/ })
  const forced = await importFiles([anon], { format: 'binance-kline-csv' })
  t.equal(forced.ticks[0]!.provenance.source, 'binance:spot')
})

t.test('Hyperliquid funding intervals and OKX funding shape', async (t) => {
  const btc = (await importFiles([join(TAPES, 'hyperliquid_funding/BTC_fundingHistory_2023-05_2023-07_from_sdk_cassette.json')])).ticks
  const at = (iso: string) => btc.find((k) => k.provenance.timestamp.startsWith(iso))
  t.match(at('2023-06-08T00:00'), { interval_hours: 8, provenance: { timestamp: '2023-06-08T00:00:00.254Z' } }, 'last 8-hourly record, ms jitter kept')
  t.match(at('2023-06-08T01:00'), { interval_hours: 1 }, 'first hourly record')
  t.match(at('2023-05-23T08:23'), { interval_hours: 8, provenance: { timestamp: '2023-05-23T08:23:53.' } }, 'off-schedule record kept as given')
  const sol = (await importFiles([join(TAPES, 'hyperliquid_funding/SOL_fundingHistory_2025-01_2026-02.json')])).ticks
  t.same([...new Set(sol.map((k) => k.kind === 'funding' && k.interval_hours))], [1])
  t.match(sol[0], { rate: 0.0000125, premium: 0.0003798388, provenance: { timestamp: '2024-12-31T20:00:00.076Z' } }, 'README example record')
  const okx = (await importFiles([join(TAPES, 'okx_swap_1h_2023_2026/SOL-USDT-SWAP_funding_8h.csv')])).ticks
  t.same([...new Set(okx.map((k) => k.kind === 'funding' && `${k.interval_hours}/${k.premium}`))], ['8/null'], 'OKX: 8-hourly, no premium')
  t.match(okx[0], { rate: -0.0001043762469433, provenance: { timestamp: '2026-04-07T08:00:00.000Z' } })
})

t.test('universe snapshot: one tick per capture, 228 symbols, 38 delisted', async (t) => {
  const { ticks } = await importFiles([join(TAPES, 'hyperliquid_funding/universe_funding_mark_2026-02-04_2026-02-09.csv')])
  t.equal(ticks.length, 11)
  for (const tick of ticks) {
    if (tick.kind !== 'universe') throw new Error('expected universe')
    t.equal(tick.assets.length, 228)
    t.equal(tick.assets.filter((a) => a.delisted).length, 38)
  }
  const first = ticks[0]!
  if (first.kind === 'universe') {
    t.match(first.assets.find((a) => a.symbol === 'MATIC'), { funding: 0, delisted: true })
    t.match(first.assets.find((a) => a.symbol === 'BTC'), { funding: 0.0000125, mark: 73306, delisted: false, open_interest: null })
  }

  // A zero funding with a moving mark is not delisted.
  const dir = await makeTempDir(t)
  const file = join(dir, 'universe.csv')
  await writeFile(file, [
    'timestamp,symbol,funding_rate,mark_price',
    '2026-02-04T21:19:43.348876+00:00,AAA,0.0,1.5',
    '2026-02-04T21:19:43.348876+00:00,BBB,0.0,2.0',
    '2026-02-04T22:00:00.000001+00:00,AAA,0.0,1.5',
    '2026-02-04T22:00:00.000001+00:00,BBB,0.0,2.1',
    '',
  ].join('\n'))
  const hand = (await importFiles([file])).ticks
  t.same(hand.map((k) => k.kind === 'universe' && k.assets.map((a) => `${a.symbol}:${a.delisted}`).join(' ')), ['AAA:true BBB:false', 'AAA:true BBB:false'])
  t.same(hand.map((k) => k.provenance.timestamp), ['2026-02-04T21:19:43.348Z', '2026-02-04T22:00:00.000Z'], 'microseconds truncated to ms')
})

t.test('re-import is byte-identical, plain and gzip; gzip round-trips through readTape', async (t) => {
  const dir = await makeTempDir(t)
  const files = [
    join(TAPES, 'bybit_linear_5m_2025-04_07/BTCUSDT_5m.csv'),
    join(TAPES, 'okx_swap_1h_2023_2026/SOL-USDT-SWAP_funding_8h.csv'),
    join(TAPES, 'hyperliquid_funding/universe_funding_mark_2026-02-04_2026-02-09.csv'),
  ]
  for (const [i, name] of ['a.ndjson', 'b.ndjson', 'a.ndjson.gz', 'b.ndjson.gz'].entries()) {
    await writeTape(i % 2 === 0 ? files : [...files], join(dir, name))
  }
  const [a, b, agz, bgz] = await Promise.all(['a.ndjson', 'b.ndjson', 'a.ndjson.gz', 'b.ndjson.gz'].map((f) => readFile(join(dir, f))))
  t.ok(a!.equals(b!), 'plain tapes byte-identical')
  t.ok(agz!.equals(bgz!), 'gzip tapes byte-identical')
  t.same(agz!.subarray(0, 2), Buffer.from([0x1f, 0x8b]), 'gzip magic')
  const fromGz = (await readAll(join(dir, 'a.ndjson.gz'))).map((k) => JSON.stringify(k)).join('\n') + '\n'
  t.equal(fromGz, a!.toString('utf8'), 'gzip tape reads back to the same records')
})

t.test('merging files keeps event-time order with a stable tie order', async (t) => {
  const btc = join(TAPES, 'okx_swap_1h_2023_2026/BTC-USDT-SWAP_funding_8h.csv')
  const eth = join(TAPES, 'okx_swap_1h_2023_2026/ETH-USDT-SWAP_funding_8h.csv')
  const ab = (await importFiles([btc, eth])).ticks
  const ba = (await importFiles([eth, btc])).ticks
  t.equal(ab.length, 826)
  t.same(ab.slice(0, 4).map((k) => k.asset), ['BTC', 'ETH', 'BTC', 'ETH'], 'ties keep argument order')
  t.same(ba.slice(0, 2).map((k) => k.asset), ['ETH', 'BTC'])
  t.ok(ab.every((k, i) => i === 0 || k.provenance.timestamp >= ab[i - 1]!.provenance.timestamp), 'non-decreasing time')
  await t.rejects(importFiles([btc, btc]), { name: 'ImportError', message: /duplicate funding for BTC-USDT-SWAP at 2026-04-07T08:00:00.000Z/ })
})

t.test('a malformed source row is reported with file and line number', async (t) => {
  const dir = await makeTempDir(t)
  await mkdir(join(dir, 'binance'))
  await mkdir(join(dir, 'bybit'))
  const cases: { name: string; body: string; line: number; message: RegExp }[] = [
    { name: 'binance/BTCUSDT_1m.csv', body: 'timestamp,open,high,low,close,volume\n2024-10-01 03:00:00,1,2,0.5,1.5,10\n2024-10-01 03:01:00,1,2,0.5,abc,10\n', line: 3, message: /close: not a decimal number: 'abc'/ },
    { name: 'binance/ETHUSDT_1m.csv', body: 'timestamp,open,high,low,close,volume\n2024-10-01 03:00:00,1,2,0.5,1.5,10\n\n2024-10-01 03:02:00,1,2,0.5,1.5,10\n', line: 3, message: /an empty line/ },
    { name: 'binance/SOLUSDT_1m.csv', body: 'timestamp,open,high,low,close,volume\n2024-02-30 03:00:00,1,2,0.5,1.5,10\n', line: 2, message: /not a calendar date/ },
    { name: 'bybit/BTCUSDT_5m.csv', body: 'timestamp,open,high,low,close,volume\n2025-04-03 17:05:00+00:00,1,2,0.5,1.5,10\n2025-04-03 17:10:00+00:00,1,2,0.5,1.5,10\n2025-04-03 17:15:00,1,2,0.5,1.5,10\n', line: 4, message: /expected a timestamp with a UTC offset/ },
    { name: 'bybit/ETHUSDT_5m.csv', body: 'timestamp,open,high,low,close,volume\n2025-04-03 17:05:00+00:00,1,2,1.2,1.5,10\n', line: 2, message: /impossible bar/ },
    { name: 'BTC-USDT-SWAP_funding_8h.csv', body: 'ts,rate\n1775548800000,0.0001\n1775577600000\n', line: 3, message: /expected 2 columns/ },
    { name: 'ETH-USDT-SWAP_1H.csv', body: 'ts,open,high,low,close,volume\n1672531200000,1,2,0.5,1.5,10\n1672531200000,1,2,0.5,1.5,10\n', line: 3, message: /duplicate bar .*also line 2/ },
    { name: 'SOL_funding.json', body: '[\n  {"coin": "SOL", "fundingRate": "0.0000125", "premium": "0.0003", "time": 1735675200076},\n  {"coin": "SOL", "fundingRate": "", "premium": "0.0003", "time": 1735678800120}\n]\n', line: 3, message: /record 2: fundingRate: not a decimal number/ },
    { name: 'universe.csv', body: 'timestamp,symbol,funding_rate,mark_price\n2026-02-04T21:19:43.348876+00:00,BTC,1.25e-05,NaN\n', line: 2, message: /mark_price: not a decimal number: 'NaN'/ },
  ]
  for (const c of cases) {
    const file = join(dir, c.name)
    await writeFile(file, c.body)
    const err = await importFiles([file]).then(() => null, (e: unknown) => e)
    t.ok(err instanceof ImportError, `${c.name}: ImportError`)
    t.match(err, { line: c.line, file, message: c.message }, `${c.name}: line ${c.line}`)
    t.ok((err as Error).message.startsWith(`${file}:${c.line}: `), `${c.name}: message names file:line`)
  }
})

t.test('readTape reports a bad record with its line number and field path', async (t) => {
  const dir = await makeTempDir(t)
  const good = join(dir, 'good.ndjson')
  await writeTape([join(TAPES, 'okx_swap_1h_2023_2026/BTC-USDT-SWAP_funding_8h.csv')], good)
  const lines = (await readFile(good, 'utf8')).split('\n').slice(0, 3)
  const variants: { mutate: (r: Record<string, any>) => void; path: string }[] = [
    { mutate: (r) => (r.rate = 'high'), path: '/rate' },
    { mutate: (r) => delete r.provenance.timestamp, path: '/provenance/timestamp' },
    { mutate: (r) => (r.provenance.quality = 'fine'), path: '/provenance/quality' },
  ]
  for (const v of variants) {
    const record = JSON.parse(lines[1]!)
    v.mutate(record)
    const bad = join(dir, 'bad.ndjson')
    await writeFile(bad, [lines[0], JSON.stringify(record), lines[2]].join('\n') + '\n')
    const err = await readAll(bad).then(() => null, (e: unknown) => e)
    t.ok(err instanceof TapeFormatError, v.path)
    t.match(err, { line: 2, path: v.path, message: new RegExp(`^${bad}:2: ${v.path}: `) })
  }
})

t.test('svc tape import CLI: stdout, --out .gz, and a bad row', async (t) => {
  const dir = await makeTempDir(t)
  const src = join(TAPES, 'okx_swap_1h_2023_2026/ETH-USDT-SWAP_funding_8h.csv')
  const svc = (args: string[]) => spawnSync(process.execPath, [join(REPO, 'bin/svc.js'), 'tape', 'import', ...args], { encoding: 'utf8', env: { ...process.env, NODE_ENV: 'test' } })

  const stdout = svc([src])
  t.equal(stdout.status, 0, `exit 0 to stdout (stderr: ${stdout.stderr.trim()})`)
  const out = join(dir, 'eth.ndjson.gz')
  const file = svc([src, '--out', out])
  t.equal(file.status, 0, `exit 0 with --out (stderr: ${file.stderr.trim()})`)
  t.equal(file.stdout, '', 'nothing on stdout when --out is given')
  const fromFile = (await readAll(out)).map((k) => JSON.stringify(k) + '\n').join('')
  t.equal(fromFile, stdout.stdout, 'stdout tape and gzip file tape hold the same records')
  t.equal(stdout.stdout.split('\n').length - 1, 413, '413 records on stdout')

  const broken = join(dir, 'BTC-USDT-SWAP_funding_8h.csv')
  await writeFile(broken, 'ts,rate\n1775548800000,0.0001\n1775577600000,x\n')
  const badOut = join(dir, 'never.ndjson')
  const failed = svc([broken, '--out', badOut])
  t.equal(failed.status, 1, 'exit 1 on a bad row')
  t.match(failed.stderr, `${broken}:3: rate: not a decimal number: 'x'`)
  await t.rejects(access(badOut), 'no tape is written when a row is bad')
})

t.test('docs/tape-format.md matches the schema and the importer registry', async (t) => {
  const doc = await readFile(join(REPO, 'docs/tape-format.md'), 'utf8')
  t.ok(doc.includes('```json\n' + JSON.stringify(TICK_JSON_SCHEMA, null, 2) + '\n```'), 'embedded JSON schema is current')
  const headings = new Set([...doc.matchAll(/^### (.+)$/gm)].flatMap((m) => m[1]!.split(', ')))
  t.same(TICK_KINDS.filter((k) => !headings.has(k)), [], 'every tick kind is documented')
  const documented = [...doc.matchAll(/^\| `([a-z-]+)` \|/gm)].map((m) => m[1]).filter((id) => id!.includes('-'))
  t.same(documented.sort(), IMPORTERS.map((i) => i.id).sort(), 'the mapping table lists exactly the registered importers')
})
