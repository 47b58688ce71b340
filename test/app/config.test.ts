/**
 * The one configuration schema (app/config.ts): defaults, typed values, one line naming every bad variable, the event
 * log it opens (embedded under $SVC_DATA_DIR/log, or Kafka), and README's environment table generated from it.
 */
import { readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { ENV_SCHEMA, ENV_TABLE_BEGIN, ENV_TABLE_END, accessLogShareOf, configErrorLine, eventLogOf, loadConfig, renderEnvTable, tickRetentionMsOf, topicNamesOf, trainUntilOf, v8FlagsOf } from '../../app/config.ts'
import { EXPECTED, OptionsError } from '../../common/validation.ts'
import { openEventLog } from '../../pipeline/log/openEventLog.ts'
import { kafkaBrokers, kafkaSkipReason } from '../helpers/logs.ts'
import { makeTempDir } from '../helpers/tmp.ts'

const README = new URL('../../README.md', import.meta.url)

t.test('defaults to the embedded log under $SVC_DATA_DIR/log', async (t) => {
  const dir = await makeTempDir(t)
  const c = loadConfig({})
  t.match(c, {
    SVC_LOG: 'embedded',
    SVC_DATA_DIR: './data',
    KAFKA_CLIENT_ID: 'decision-intelligence-service',
    KAFKA_TOPIC_PREFIX: '',
    KAFKA_REPLICATION_FACTOR: 1,
    PORT: 8080,
    SVC_PARTITIONS: 3,
    SVC_TRUST_PROXY: false,
  })
  t.same(topicNamesOf(c), { ticks: 'venue.ticks', decisions: 'decisions', outcomes: 'outcomes', draws: 'billing.draws', calls: 'duel.calls', callOptIns: 'duel.opt_ins', funnel: 'ops.funnel' })
  const log = await openEventLog(eventLogOf(loadConfig({ SVC_DATA_DIR: dir })))
  t.teardown(() => log.close())
  t.equal(log.kind, 'embedded')
  t.ok((await stat(join(dir, 'log', 'LOCK'))).isFile(), 'log directory is $SVC_DATA_DIR/log')
})

t.test('values are typed; an empty variable is an unset one', async (t) => {
  const c = loadConfig({ PORT: '0', SVC_TRUST_PROXY: 'true', SVC_REPLAY_SPEED: '1.5', SVC_PAY_TO: '', SVC_TOPIC_DRAWS: 'x.draws' })
  t.equal(c.PORT, 0)
  t.equal(c.SVC_TRUST_PROXY, true)
  t.equal(c.SVC_REPLAY_SPEED, 1.5)
  t.equal(c.SVC_PAY_TO, undefined)
  t.equal(topicNamesOf(c).draws, 'x.draws')
})

t.test('SVC_ACCESS_LOG: all, off, 1, 0 or a share; anything else names the variable', async (t) => {
  t.equal(accessLogShareOf(loadConfig({})), 1, 'default: every request')
  for (const [raw, share] of [['all', 1], ['off', 0], ['1', 1], ['0', 0], ['0.1', 0.1], ['.25', 0.25]] as const) {
    t.equal(accessLogShareOf(loadConfig({ SVC_ACCESS_LOG: raw })), share, raw)
  }
  for (const bad of ['some', '1.5', '-0.1', '0.0', '10%']) t.throws(() => loadConfig({ SVC_ACCESS_LOG: bad }), { message: /environment\/SVC_ACCESS_LOG/ }, bad)
  // Issue 33 item 7: the allowed values in words, never the raw regular expression.
  t.throws(() => loadConfig({ SVC_ACCESS_LOG: 'some' }), {
    message: 'environment/SVC_ACCESS_LOG: must be all, off, or the share of answered requests to log, a decimal between 0 and 1 such as 0.1 (one in ten); 1 means all and 0 off',
  })
})

t.test('every pattern of the schema says what it admits in words; an error shows the words, not the expression', async (t) => {
  const patterned: string[] = []
  const walk = (node: unknown, at: string): void => {
    if (node === null || typeof node !== 'object') return
    const o = node as Record<string, unknown>
    if (typeof o.pattern === 'string') {
      patterned.push(at)
      t.type(o[EXPECTED], 'string', `${at}: its pattern has words (${EXPECTED})`)
    }
    for (const [k, v] of Object.entries(o)) walk(v, `${at}/${k}`)
  }
  walk(ENV_SCHEMA, 'environment')
  t.ok(patterned.length >= 20, `${patterned.length} patterns`)
  let err: unknown
  try {
    loadConfig({ KAFKA_BROKERS: 'localhost', SVC_TOPIC_TICKS: 'a b', SVC_PAY_TO: 'me', SVC_BASE_URL: 'https://x.example/api', SVC_HL_WS_URL: 'http://x' })
  } catch (e) {
    err = e
  }
  const line = configErrorLine(err as OptionsError)
  t.notMatch(line, /pattern|\^|\$\)/, `no regular expression: ${line}`)
  t.match(line, 'environment/KAFKA_BROKERS: must be host:port, or several separated by commas')
  t.match(line, 'environment/SVC_TOPIC_TICKS: must be a name of letters, digits')
  t.match(line, 'environment/SVC_PAY_TO: must be a 0x address of 40 hex digits')
  t.match(line, 'environment/SVC_BASE_URL: must be an http:// or https:// origin without a path')
  t.match(line, 'environment/SVC_HL_WS_URL: must be a ws:// or wss:// URL')
})

t.test('SVC_CORS_ORIGINS: unset is none; a comma-separated list of origins, anything else names the variable', async (t) => {
  t.equal(loadConfig({}).SVC_CORS_ORIGINS, undefined, 'default: no CORS')
  t.equal(loadConfig({ SVC_CORS_ORIGINS: 'https://app.example,http://localhost:5173' }).SVC_CORS_ORIGINS, 'https://app.example,http://localhost:5173')
  for (const bad of ['app.example', 'https://app.example/', 'https://app.example/path', 'https://a.example, https://b.example', '*']) {
    t.throws(() => loadConfig({ SVC_CORS_ORIGINS: bad }), { message: /environment\/SVC_CORS_ORIGINS/ }, bad)
  }
})

t.test('invalid configuration names the variable, every one of them, in one line', async (t) => {
  t.throws(() => loadConfig({ SVC_LOG: 'rabbit' }), { code: 'OPTIONS_INVALID', message: /environment\/SVC_LOG/ })
  t.throws(() => loadConfig({ SVC_LOG: 'kafka' }), { code: 'OPTIONS_INVALID', message: /environment\/KAFKA_BROKERS/ })
  t.throws(() => loadConfig({ SVC_LOG: 'kafka', KAFKA_BROKERS: 'localhost' }), { message: /environment\/KAFKA_BROKERS/ })
  t.throws(() => loadConfig({ KAFKA_REPLICATION_FACTOR: '0' }), { message: /environment\/KAFKA_REPLICATION_FACTOR/ })
  t.throws(() => loadConfig({ KAFKA_SESSION_TIMEOUT_MS: '1000' }), { message: /environment\/KAFKA_SESSION_TIMEOUT_MS/ }, 'below the broker floor')
  t.throws(() => loadConfig({ SVC_LOG: 'kafka', KAFKA_BROKERS: '127.0.0.1:9092,' }), { message: /environment\/KAFKA_BROKERS/ })
  t.same(eventLogOf(loadConfig({ SVC_LOG: 'kafka', KAFKA_BROKERS: '127.0.0.1:9092, 10.0.0.2:9093' })), {
    kind: 'kafka',
    kafka: { brokers: ['127.0.0.1:9092', '10.0.0.2:9093'], clientId: 'decision-intelligence-service', topicPrefix: '', replicationFactor: 1, sessionTimeoutMs: 30_000 },
  })
  t.match(eventLogOf(loadConfig({ SVC_LOG: 'kafka', KAFKA_BROKERS: '127.0.0.1:9092', SVC_CLUSTER: 'on', KAFKA_INSTANCE_ID: 'a' })), { kafka: { instanceId: 'a', replicaGroups: true } }, 'several instances: groups named by the instance')
  t.throws(() => loadConfig({ SVC_CLUSTER: 'yes' }), { message: /environment\/SVC_CLUSTER/ })
  let err: unknown
  try {
    loadConfig({ PORT: '70000', SVC_PAY_TO: 'me', SVC_TRUST_PROXY: 'maybe' })
  } catch (e) {
    err = e
  }
  t.ok(err instanceof OptionsError)
  const line = configErrorLine(err as OptionsError)
  t.notOk(line.includes('\n'), 'one line')
  for (const name of ['PORT', 'SVC_PAY_TO', 'SVC_TRUST_PROXY']) t.match(line, `environment/${name}:`, `names ${name}`)
})

t.test("README's environment table is the one generated from the schema", async (t) => {
  const readme = await readFile(README, 'utf8')
  const begin = readme.indexOf(ENV_TABLE_BEGIN)
  const end = readme.indexOf(ENV_TABLE_END)
  t.ok(begin >= 0 && end > begin, 'README has the generated table markers')
  t.equal(readme.slice(begin + ENV_TABLE_BEGIN.length, end).trim(), renderEnvTable(), 'run `svc docs env` to regenerate it')
})

t.test('SVC_LOG=kafka connects to KAFKA_BROKERS', { skip: kafkaSkipReason() ?? false }, async (t) => {
  const log = await openEventLog(eventLogOf(loadConfig({ SVC_LOG: 'kafka', KAFKA_BROKERS: kafkaBrokers()!.join(','), KAFKA_TOPIC_PREFIX: 'open-event-log-test.' })))
  t.teardown(() => log.close())
  t.equal(log.kind, 'kafka')
  await log.ensureTopics([{ name: 'probe', partitions: 1 }])
  t.equal(await log.partitionsOf('probe'), 1)
})

t.test('SVC_TRAIN_UNTIL: an RFC 3339 instant, read once into epoch ms; one line naming it otherwise', async (t) => {
  t.equal(trainUntilOf(loadConfig({})), null, 'unset: SVC_TRAIN_DAYS decides')
  t.equal(trainUntilOf(loadConfig({ SVC_TRAIN_UNTIL: '2026-06-20T00:00:00Z' })), Date.parse('2026-06-20T00:00:00Z'))
  t.throws(() => loadConfig({ SVC_TRAIN_UNTIL: '20 June 2026' }), OptionsError, 'not RFC 3339: refused by the schema')
  // RFC 3339 admits a leap second; the clock cannot place one, so it is refused the same way, naming the variable.
  const err = (() => {
    try {
      trainUntilOf(loadConfig({ SVC_TRAIN_UNTIL: '2016-12-31T23:59:60Z' }))
    } catch (e) {
      return e
    }
    return null
  })()
  t.ok(err instanceof OptionsError)
  t.match(configErrorLine(err as OptionsError), /SVC_TRAIN_UNTIL/)
})

t.test('ticks stay for the longest feature window plus the margin (issue 31 item 3)', async (t) => {
  t.equal(tickRetentionMsOf(loadConfig({})), 37 * 86_400_000, 'default: 30-day baselines + 7 days')
  t.equal(tickRetentionMsOf(loadConfig({ SVC_TICK_RETENTION_MARGIN_DAYS: '0.5' })), 30.5 * 86_400_000)
  t.equal(loadConfig({}).SVC_RETENTION_INTERVAL_S, 3600)
  t.throws(() => loadConfig({ SVC_TICK_RETENTION_MARGIN_DAYS: '-1' }), { message: /environment\/SVC_TICK_RETENTION_MARGIN_DAYS/ })
})

t.test("SVC_HEAP_GROWTH_PERCENT: V8's heap growing factor svc start sets; 0 leaves it to V8 (issue 31)", async (t) => {
  t.same(v8FlagsOf(loadConfig({})), ['--heap-growing-percent=10'], 'default: collect once the heap is 10 % past what the last full collection kept')
  t.same(v8FlagsOf(loadConfig({ SVC_HEAP_GROWTH_PERCENT: '25' })), ['--heap-growing-percent=25'])
  t.same(v8FlagsOf(loadConfig({ SVC_HEAP_GROWTH_PERCENT: '0' })), [], "0: V8's own heuristics")
  t.throws(() => loadConfig({ SVC_HEAP_GROWTH_PERCENT: '-1' }), /SVC_HEAP_GROWTH_PERCENT/)
  t.throws(() => loadConfig({ SVC_HEAP_GROWTH_PERCENT: '1.5' }), /SVC_HEAP_GROWTH_PERCENT/)
})
