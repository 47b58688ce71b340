/**
 * `svc tape record` as a real process against the local Hyperliquid replay server (HTTP + websocket on 127.0.0.1).
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { readTape } from '../../../ingest/TapeReader.ts'
import { withReplayServer } from '../../helpers/HyperliquidReplayServer.ts'
import { makeTempDir } from '../../helpers/tmp.ts'

const SVC = fileURLToPath(new URL('../../../bin/svc.js', import.meta.url))

interface Run {
  code: number | null
  stdout: string
  stderr: string
}

/**
 * Runs `svc` to its exit. `interruptAfter`: send SIGINT once the child has logged a line matching `line` (its handler
 * is installed by then, however slowly a busy machine starts it) and `ms` more have passed.
 */
function svc(args: string[], opts: { interruptAfter?: { line: RegExp; ms: number } } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SVC, ...args], { env: { ...process.env, NODE_ENV: 'test', LOG_FORMAT: 'json' } })
    let stdout = ''
    let stderr = ''
    let armed = false
    const watch = () => {
      if (armed || !opts.interruptAfter || !opts.interruptAfter.line.test(stdout + stderr)) return
      armed = true
      setTimeout(() => child.kill('SIGINT'), opts.interruptAfter.ms)
    }
    child.stdout.on('data', (d: Buffer) => ((stdout += d.toString()), watch()))
    child.stderr.on('data', (d: Buffer) => ((stderr += d.toString()), watch()))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

async function tapeSummary(file: string): Promise<{ count: number; kinds: Set<string> }> {
  const kinds = new Set<string>()
  let count = 0
  for await (const { tick } of readTape(file)) {
    count++
    kinds.add(`${tick.kind}:${tick.provenance.provider}`)
  }
  return { count, kinds }
}

t.test('--duration 3 against the local servers writes a valid tape', async (t) => {
  const server = await withReplayServer(t, { wsIntervalMs: 100 })
  const dir = await makeTempDir(t)
  const out = join(dir, 'rec.ndjson.gz')
  const run = await svc([
    'tape', 'record', '--coins', 'BTC,ETH,SOL', '--out', out,
    '--base-url', server.baseUrl, '--ws-url', server.wsUrl,
    '--duration', '3', '--poll-s', '1', '--reorder-ms', '500',
  ])
  t.equal(run.code, 0, run.stderr)
  const { count, kinds } = await tapeSummary(out)
  t.ok(count > 50, `${count} records`)
  for (const k of ['universe', 'mark', 'index', 'mid', 'open_interest', 'predicted_funding', 'book_top']) t.ok(kinds.has(`${k}:hyperliquid-info`), `${k} from REST`)
  for (const k of ['trade', 'book_top', 'mark', 'predicted_funding']) t.ok(kinds.has(`${k}:hyperliquid-ws`), `${k} from the stream`)
  t.same(await readdir(dir), ['rec.ndjson.gz'], 'no partial or late file left behind')
  t.ok(server.wsSubscriptions.length === 12, 'subscribed trades, l2Book, activeAssetCtx, candle for 3 coins')
})

t.test('SIGINT stops the recording and keeps what was received', async (t) => {
  const server = await withReplayServer(t, { wsIntervalMs: 100 })
  const dir = await makeTempDir(t)
  const out = join(dir, 'rec.ndjson')
  const run = await svc(['tape', 'record', '--coins', 'BTC', '--out', out, '--base-url', server.baseUrl, '--ws-url', server.wsUrl, '--poll-s', '1'], {
    // It installs its SIGINT handler in the tick that logs "recording"; then a second of data (a trade every 100 ms).
    interruptAfter: { line: /"msg":"recording"/, ms: 1000 },
  })
  t.equal(run.code, 0, run.stderr)
  const { count, kinds } = await tapeSummary(out)
  t.ok(count > 0 && kinds.has('trade:hyperliquid-ws'), `${count} records`)
})

t.test('usage errors exit 2', async (t) => {
  t.equal((await svc(['tape', 'record'])).code, 2, 'missing --coins')
  t.equal((await svc(['tape', 'record', '--coins', 'BTC,xyz:TSLA'])).code, 2, 'not a plain coin')
  t.equal((await svc(['tape', 'record', '--coins', 'BTC', '--poll-s', '0'])).code, 2)
  t.equal((await svc(['tape', 'record', '--coins', 'BTC', '--ws-url', 'http://x'])).code, 2)
  const help = await svc(['tape', 'record', '--help'])
  t.equal(help.code, 0)
  t.match(help.stdout, /--coins/)
})
