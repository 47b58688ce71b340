/**
 * The console on a terminal is one line per record (issue 33 item 7: pino-pretty's default spread each field of an
 * access-log entry over its own line, 8 lines per request); off a terminal the JSON lines are unchanged. A child
 * process logs through the one logger and the real AccessLog, once on a pseudo-terminal (util-linux `script`) and
 * once into a pipe.
 */
import t from 'tap'
import { execFile } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { makeTempDir } from '../helpers/tmp.ts'
import type { TapTest } from '../helpers/logs.ts'

const exec = promisify(execFile)
const ROOT = new URL('../../', import.meta.url).pathname

const SCRIPT = `
import { configureLogging, childLogger } from '${ROOT}common/logger.ts'
import { AccessLog } from '${ROOT}serving/metrics/AccessLog.ts'
configureLogging({ level: 'info', format: 'pretty' })
const log = childLogger('http')
const access = new AccessLog(log, 1)
access.answered('req_1', 'market.get', 'GET', '/v1/market/BTC', 200, 0.414, null)
access.answered('req_2', 'decide', 'POST', '/v1/decide/S01', 402, 1.5, 'x402')
log.warn({ err: new Error('boom'), note: 'two words' }, 'failed')
`

const hasScript = await exec('script', ['-qec', 'true', '/dev/null']).then(
  () => true,
  () => false,
)

async function scriptFile(t: TapTest): Promise<string> {
  const dir = await makeTempDir(t, 'svc-logger-')
  const file = join(dir, 'log.ts')
  await writeFile(file, SCRIPT)
  return file
}

const stripAnsi = (s: string) => s.replace(/\x1b\[[0-9;]*m/g, '')

t.test('on a terminal: one line per request, fields as key=value; an error keeps its stack below', { skip: hasScript ? false : 'util-linux script (a pseudo-terminal) is not available here' }, async (t) => {
  const file = await scriptFile(t)
  const env: Record<string, string | undefined> = { ...process.env, TERM: 'xterm' }
  delete env.CI
  const r = await exec('script', ['-qec', `'${process.execPath}' --import tsx '${file}'`, '/dev/null'], { env, cwd: ROOT })
  const lines = stripAnsi(r.stdout).split(/\r?\n/).filter((l) => l.length > 0)
  const requests = lines.filter((l) => l.includes('http: request'))
  t.equal(requests.length, 2, 'two requests, two lines')
  t.match(requests[0], /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: http: request request_id=req_1 route=market\.get method=GET path=\/v1\/market\/BTC status=200 ms=0\.41$/)
  t.match(requests[1], /request_id=req_2 route=decide method=POST path=\/v1\/decide\/S01 status=402 ms=1\.5 rail=x402$/)
  const warn = lines.findIndex((l) => l.includes('http: failed'))
  t.match(lines[warn], /WARN: http: failed err=boom note="two words"$/, 'the error on its line, a value with a space quoted')
  t.match(lines[warn + 1], /^\s+at /, 'its stack below it')
  t.notOk(lines.some((l) => /^\s+(request_id|route|method|status):/.test(l)), 'no field on a line of its own')
})

t.test('off a terminal: JSON lines as before', async (t) => {
  const file = await scriptFile(t)
  const r = await exec(process.execPath, ['--import', 'tsx', file], { cwd: ROOT })
  const records = r.stderr.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>)
  t.equal(records.length, 3)
  t.match(records[0], { level: 30, component: 'http', request_id: 'req_1', route: 'market.get', method: 'GET', path: '/v1/market/BTC', status: 200, ms: 0.41, msg: 'request' })
  t.match(records[1], { rail: 'x402', status: 402 })
  t.match(records[2], { level: 40, msg: 'failed', err: { message: 'boom' } })
})
