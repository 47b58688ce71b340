/**
 * Property-based API testing with Schemathesis (pinned in .ci/requirements.txt) against a real server on 127.0.0.1
 * that serves its own /openapi.json: every documented operation is exercised with generated valid and invalid
 * inputs, and every answer must be a non-5xx (other than documented 503s) that conforms to the documented schema.
 *
 * Wiring: the real market adapter (MarketState fed from a generated tape through a real EmbeddedLog, replay universe),
 * real provider health, CoinGecko market caps from a local stand-in (test/helpers/coingecko.ts, constructed) and
 * real billing (draws journal on an EmbeddedLog); ledger, engine and the other parts from the in-memory test services. Paid routes answer
 * the x402 challenge (no payment is made).
 *
 * Without the Python tool the test skips with a message — except under CI=true, where .ci/run installs it and the
 * test must run.
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { openMarketServices } from '../../app/openMarketServices.ts'
import { coingeckoStub, CONSTRUCTED_MARKETS } from '../helpers/coingecko.ts'
import { marketFixture, TICKS_TOPIC } from '../helpers/marketTape.ts'
import { memoryServices } from '../helpers/serving/memoryServices.ts'
import { withServer } from '../helpers/serving/server.ts'
import { withArena } from '../helpers/serving/arena.ts'
import { withDelivery } from '../helpers/serving/delivery.ts'
import { withBilling } from '../helpers/serving/billing.ts'
import { pythonModuleMissing, skipUnlessTool } from '../helpers/requiredTool.ts'
import { makeTempDir } from '../helpers/tmp.ts'
import { openAnswerKeyring } from '../../record/answerKeys/answerKeyFile.ts'

const CLI = ['-m', 'schemathesis.cli']

const skip = skipUnlessTool(t, pythonModuleMissing('python3', 'schemathesis.cli', 'pip install -r .ci/requirements.txt'), 'the schemathesis test')

t.test('schemathesis: no server errors and no schema violations', { skip, timeout: 600_000 }, async (t) => {
  const fx = await marketFixture(t, { seed: 13, hours: 26, assets: ['BTC', 'ETH', 'SOL'] })
  const cg = await coingeckoStub(t, () => ({ status: 200, json: CONSTRUCTED_MARKETS }))
  const wiring = await openMarketServices({ log: fx.log, ticksTopic: TICKS_TOPIC, options: { universe: 'replay', coingeckoUrl: cg.url }, probes: false })
  t.teardown(() => wiring.close())
  await wiring.state.caughtUp()
  const { parts } = memoryServices(Date.now())
  const billing = await withBilling(t)
  const arena = await withArena(t, parts.clock!)
  const { delivery } = await withDelivery(t, parts.clock!)
  const server = await withServer(t, {
    // The answer keys too, so the signed decision reads (meta.signatures) are checked against their documented schema.
    services: { ...parts, billing, arena, delivery, market: wiring.market, providers: wiring.providers, answerKeys: await openAnswerKeyring({ dataDir: await makeTempDir(t), now: Date.now }) },
  })
  const reportDir = await makeTempDir(t, 'svc-schemathesis-')
  const junit = join(reportDir, 'junit.xml')
  // Unexpected-method probes: every method uWS parses. QUERY (an HTTP draft) is refused by uWS's parser, which
  // closes the connection before the application sees it; that is transport behaviour, not an API answer.
  const config = join(reportDir, 'schemathesis.toml')
  // Undeclared header names: the pinned uWS build stalls (until its idle timeout) on header names with characters
  // other than letters, digits and '-' (e.g. 'M_w', 'a+b'), before the application sees the request
  // (docs/decisions.md); that transport gap is recorded, not re-found on every run.
  await writeFile(
    config,
    '[generation]\nallow-extra-parameters = false\n\n[phases.coverage]\nunexpected-methods = ["DELETE", "PATCH", "PUT", "POST", "OPTIONS", "TRACE", "GET"]\n',
  )
  const args = [
    ...CLI, '--config-file', config, 'run', `${server.url}/openapi.json`,
    '--checks', 'not_a_server_error,response_schema_conformance',
    // A live stream never ends, so a request-and-answer tool cannot judge it (test/serving/streams/ does).
    '--exclude-path-regex', '^/v1/streams/',
    '--max-examples', process.env.SVC_SCHEMATHESIS_EXAMPLES ?? '15',
    // 150 s covers every operation's examples and coverage phase with fuzzing time to spare; CI time is shared.
    '--max-time', process.env.SVC_SCHEMATHESIS_MAX_TIME ?? '150',
    '--seed', '1',
    '--generation-database', 'none',
    '--workers', '2',
    '--phases', 'examples,coverage,fuzzing',
    '--request-timeout', '10',
    '--no-color',
    '--report', 'junit',
    '--report-junit-path', junit,
    // Health checks judge the generator (slow or filtered data), not the API.
    '--suppress-health-check', 'all',
  ]
  const { code, output } = await new Promise<{ code: number | null; output: string }>((resolve) => {
    const child = spawn('python3', args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } })
    let output = ''
    child.stdout.on('data', (d: Buffer) => (output += d.toString()))
    child.stderr.on('data', (d: Buffer) => (output += d.toString()))
    child.on('close', (c) => resolve({ code: c, output }))
  })
  if (process.env.SVC_SCHEMATHESIS_OUT) await writeFile(process.env.SVC_SCHEMATHESIS_OUT, output)
  const text = output.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '')
  const summary = text.slice(text.lastIndexOf('SUMMARY'))
  const tested = /Tested:\s+(\d+)/.exec(summary)
  t.ok(tested && Number(tested[1]) > 40, `schemathesis tested the operations (${tested?.[1] ?? 'none'})`)
  const failed = /Failures:/.test(summary)
  const at = text.indexOf('=== FAILURES ===')
  t.notOk(failed, `no check failures (server errors, schema violations)${failed ? `:\n${text.slice(at, at + 4000)}` : ''}`)
  t.notMatch(summary, /Network Error/, 'every request got an HTTP answer')
  // Errors inside the tool itself (e.g. hypothesis's lambda-source parser on CPython 3.11) are not API findings.
  const runtime = /Runtime Error:\s+(\d+)/.exec(summary)
  if (runtime) t.comment(`schemathesis reported ${runtime[1]} internal runtime error(s) of its own; see its output`)
  t.ok(code === 0 || (!failed && !/Network Error/.test(summary)), `exit ${code}:\n${summary}`)
})
