/**
 * The access log's sampling (SVC_ACCESS_LOG): a share logs exactly that fraction of answers, deterministically; a 5xx
 * answer is always logged; below info nothing is built. Lines are captured from a real pino logger.
 */
import t from 'tap'
import { pino } from 'pino'
import { AccessLog } from '../../../serving/metrics/AccessLog.ts'

function capture(level = 'info') {
  const lines: Array<Record<string, unknown>> = []
  const logger = pino({ level }, { write: (s: string) => void lines.push(JSON.parse(s)) })
  return { logger, lines }
}

t.test('a share of 0.25 logs one answer in four, and every 5xx', async (t) => {
  const { logger, lines } = capture()
  const log = new AccessLog(logger, 0.25)
  for (let i = 0; i < 100; i++) log.answered(`id-${i}`, 'healthz', 'GET', '/healthz', 200, 0.5, null)
  t.equal(lines.length, 25, 'exactly a quarter')
  t.same(lines.slice(0, 2).map((l) => l.request_id), ['id-3', 'id-7'], 'evenly spaced, not random')
  log.answered('boom', 'feed', 'GET', '/v1/feed', 500, 1.234, null)
  t.match(lines.at(-1), { request_id: 'boom', route: 'feed', method: 'GET', path: '/v1/feed', status: 500, ms: 1.23, msg: 'request' })
  t.equal(lines.length, 26, 'a 5xx is logged whatever the share')
})

t.test('share 1 logs every answer; the rail is there only when paid', async (t) => {
  const { logger, lines } = capture()
  const log = new AccessLog(logger, 1)
  log.answered('a', 'test.work', 'POST', '/v1/test/work', 200, 3, 'credits')
  log.answered('b', 'unmatched', 'GET', '/x', 404, 0.1, null)
  t.equal(lines.length, 2)
  t.equal(lines[0]!.rail, 'credits')
  t.notOk('rail' in lines[1]!)
})

t.test('below info, nothing is written', async (t) => {
  const { logger, lines } = capture('warn')
  const log = new AccessLog(logger, 1)
  log.answered('a', 'healthz', 'GET', '/healthz', 200, 1, null)
  log.answered('b', 'healthz', 'GET', '/healthz', 503, 1, null)
  t.equal(lines.length, 0)
})
