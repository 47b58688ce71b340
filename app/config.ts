/**
 * THE configuration schema: every environment variable the service reads, with its type, default and meaning, in one
 * TypeBox schema. The command line validates the environment against it once, at start; a bad value stops the
 * process with one line naming the variable (`svc: invalid environment: environment/PORT: must be <= 65535`), never a
 * stack trace. Nothing else reads process.env (test/layers.test.ts); library code takes these values as options.
 *
 * README's environment table is generated from this schema (`svc docs env`) and a test fails when they disagree.
 */
import { resolve, join } from 'node:path'
import { LOG_LEVELS, type LoggingOptions } from '../common/logger.ts'
import type { ProgressOptions } from '../common/progress.ts'
import { ADDRESS_SOURCE, StringEnum, Type, type Static, type TSchema } from '../common/schema.ts'
import { describeFieldErrors, OptionsError, validateOptions, type FieldError } from '../common/validation.ts'
import type { OpenEventLogOptions } from '../pipeline/log/openEventLog.ts'
import { DEFAULT_PARTITIONS, topicNames, type TopicNames } from '../pipeline/topics.ts'
import { LONGEST_FEATURE_WINDOW_MS } from '../pipeline/features/FeatureState.ts'

const URL_WORDS = 'an http:// or https:// URL'
const Url = (description: string) => Type.Optional(Type.String({ pattern: '^https?://[^\\s]+$', 'x-expected': URL_WORDS, description }))
/** Topic and group names: what Kafka accepts. */
const NAME_WORDS = 'a name of letters, digits, ".", "_" and "-"'
/** A list of browser origins (the MCP endpoint's and the API's CORS allowlists): the one pattern and its words. */
const ORIGIN_LIST = {
  pattern: '^https?://[^/,\\s]+(,https?://[^/,\\s]+)*$',
  'x-expected': 'http:// or https:// origins without a path, separated by commas (https://app.example.com,https://b.example.com)',
} as const

/**
 * Every variable. `default` is what an unset (or empty) variable means; `x-unset` says it in words where the default
 * is not a constant.
 */
export const ENV_SCHEMA = Type.Object(
  {
    SVC_DATA_DIR: Type.String({ minLength: 1, default: './data', description: 'where the log, Parquet files, fits and `catalog.duckdb` live' }),
    PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 8080, description: 'the port the API listens on (0 picks a free one)' }),
    HOST: Type.String({ minLength: 1, default: '127.0.0.1', description: 'the address the API listens on' }),
    SVC_LOG: StringEnum(['embedded', 'kafka'], { default: 'embedded', description: 'the event log: the embedded file log (one process) or Apache Kafka' }),
    KAFKA_BROKERS: Type.Optional(
      Type.String({
        pattern: '^\\s*[^\\s:,]+:[0-9]{1,5}\\s*(,\\s*[^\\s:,]+:[0-9]{1,5}\\s*)*$',
        'x-expected': 'host:port, or several separated by commas (broker1:9092,broker2:9092)',
        description: 'comma-separated `host:port` list; required with SVC_LOG=kafka',
      }),
    ),
    KAFKA_CLIENT_ID: Type.String({ minLength: 1, default: 'decision-intelligence-service', description: 'Kafka client id' }),
    KAFKA_TOPIC_PREFIX: Type.String({ pattern: '^[a-zA-Z0-9._-]*$', 'x-expected': NAME_WORDS, maxLength: 100, default: '', description: 'prefix of every topic and consumer group on the broker' }),
    KAFKA_REPLICATION_FACTOR: Type.Integer({ minimum: 1, maximum: 32, default: 1, description: 'replication factor of the topics the service creates' }),
    KAFKA_INSTANCE_ID: Type.Optional(
      Type.String({
        pattern: '^[a-zA-Z0-9._-]+$',
        'x-expected': NAME_WORDS,
        maxLength: 100,
        'x-unset': 'derived from KAFKA_CLIENT_ID and KAFKA_TOPIC_PREFIX',
        description: "this instance's transactional identity: a restart with the same id fences and aborts its predecessor's open unit; give each concurrent instance its own",
      }),
    ),
    KAFKA_SESSION_TIMEOUT_MS: Type.Integer({
      minimum: 6000,
      maximum: 1_800_000,
      default: 30_000,
      description: "how long the broker waits for a silent consumer before reassigning its partitions (a killed process's successor waits up to this long); at least the broker's group.min.session.timeout.ms",
    }),
    SVC_CLUSTER: StringEnum(['off', 'on'], {
      default: 'off',
      description:
        "several instances on one Kafka cluster (issue 32, README 'Several instances'): each instance, with its own KAFKA_INSTANCE_ID, PORT and SVC_DATA_DIR, reads every partition into its own state, and one of them, the holder of the venue-feed lease, feeds the venue (another takes over within KAFKA_SESSION_TIMEOUT_MS of its death), and each payer's credits are served by the one instance that owns the payer's partition (the others forward to it); needs SVC_LOG=kafka, KAFKA_INSTANCE_ID and the same SVC_SIGNING_SECRET on every instance",
    }),
    SVC_PARTITIONS: Type.Integer({ minimum: 1, maximum: 1024, default: DEFAULT_PARTITIONS, description: 'partitions per topic the service creates' }),
    SVC_TOPIC_TICKS: Type.String({ pattern: '^[a-zA-Z0-9._-]+$', 'x-expected': NAME_WORDS, default: topicNames().ticks, description: 'topic of venue ticks' }),
    SVC_TOPIC_DECISIONS: Type.String({ pattern: '^[a-zA-Z0-9._-]+$', 'x-expected': NAME_WORDS, default: topicNames().decisions, description: 'topic of the decision ledger' }),
    SVC_TOPIC_OUTCOMES: Type.String({ pattern: '^[a-zA-Z0-9._-]+$', 'x-expected': NAME_WORDS, default: topicNames().outcomes, description: 'topic of resolved outcomes' }),
    SVC_TOPIC_DRAWS: Type.String({ pattern: '^[a-zA-Z0-9._-]+$', 'x-expected': NAME_WORDS, default: topicNames().draws, description: 'topic of the credit draws journal' }),
    SVC_TOPIC_CALLS: Type.String({ pattern: '^[a-zA-Z0-9._-]+$', 'x-expected': NAME_WORDS, default: topicNames().calls, description: 'topic of the locked player calls (the duel)' }),
    SVC_TOPIC_CALL_OPT_INS: Type.String({ pattern: '^[a-zA-Z0-9._-]+$', 'x-expected': NAME_WORDS, default: topicNames().callOptIns, description: 'topic of the duel boards opt-in records' }),
    SVC_TOPIC_FUNNEL: Type.String({ pattern: '^[a-zA-Z0-9._-]+$', 'x-expected': NAME_WORDS, default: topicNames().funnel, description: "topic of the operator funnel's snapshots" }),
    SVC_VENUE: StringEnum(['simulated', 'hyperliquid'], {
      default: 'simulated',
      description: 'the venue `svc start` ingests: the seeded simulated venue in the present (no network), or live Hyperliquid (REST backfill of SVC_TRAIN_DAYS + 7 days of 1h bars and funding, then the websocket; README "Run on the live venue")',
    }),
    SVC_TAPE: Type.Optional(
      Type.String({
        minLength: 1,
        'x-unset': 'the simulated venue in the present: history generated up to now, then live ticks at 1x',
        description: 'a dated tape `svc start` replays instead (the fast demo and regression mode; answers then live in its virtual time)',
      }),
    ),
    SVC_REPLAY_SPEED: Type.Number({ minimum: 0, default: 60, description: 'with SVC_TAPE: event time per wall time after the warm-up (0: as fast as possible)' }),
    SVC_SIM_HISTORY_DAYS: Type.Number({
      minimum: 1,
      maximum: 366,
      default: 35,
      description: 'without SVC_TAPE: days of simulated history before the first start in an empty data folder, from the UTC midnight before (more than SVC_TRAIN_DAYS)',
    }),
    SVC_TRAIN_DAYS: Type.Number({
      exclusiveMinimum: 0,
      default: 30,
      description: "days of each asset's first ticks before decisions start: the bootstrap release's window (its first two thirds fit it, the last third evaluates it)",
    }),
    SVC_BOOTSTRAP_RELEASE: StringEnum(['on', 'off'], {
      default: 'on',
      description:
        "on: a data folder with no active release builds, evaluates and (if its four gates pass) activates release 2.0.0 from its own training window at the cut (svc release's path, logged as such); off: nothing is sold until an operator activates a release (`svc release`)",
    }),
    SVC_RECORD_INTERVAL_S: Type.Number({
      minimum: 0,
      default: 60,
      description: 'seconds between runs of the measured record\'s batch job (calibration, priors, snapshots, ladder); 0: only `svc record build`',
    }),
    SVC_STATE_SNAPSHOT_S: Type.Number({
      minimum: 0,
      default: 60,
      description:
        "seconds between state snapshots of each stream processor (<data>/state: its state tied to the log positions it reflects, so a restart reads only the tail) and of the simulated venue's generator (so a restart generates only the gap); one more is written at a clean stop; 0: only at stop",
    }),
    SVC_HOT_WINDOW_DAYS: Type.Number({
      minimum: 1,
      default: 7,
      description:
        "days of event time a graded duel call stays in memory (and in its state snapshot) after the newest resolution, and the ledger's live streams keep in memory (an older cursor reads the log); older calls are read back from the sealed Parquet through DuckDB (history pages, the scoreboard's recent calls). At least a day: the Parquet sink seals within seconds, and calls leave memory only while it is sealing (or while a start folds the journals, before the sink starts)",
    }),
    SVC_COMPACT_INTERVAL_S: Type.Number({
      minimum: 0,
      default: 3600,
      description: "seconds between compactions of closed days' small Parquet files into one per directory and partition; 0: only `svc compact`",
    }),
    SVC_RETENTION_INTERVAL_S: Type.Number({
      minimum: 0,
      default: 3600,
      description:
        'embedded log: seconds between tick retention runs (tick segments sealed in Parquet, older than the kept window and below every committed consumer position are deleted); 0: ticks stay in the log',
    }),
    SVC_TICK_RETENTION_MARGIN_DAYS: Type.Number({
      minimum: 0,
      default: 7,
      description:
        'ticks stay in the log for the longest feature window (30 days) plus this many days of event time (embedded) or after their append (Kafka: retention.ms of the ticks topic the service creates; the Parquet sink must keep up within it)',
    }),
    SVC_TRAIN_UNTIL: Type.Optional(Type.String({ format: 'date-time', description: 'an absolute training cut (ISO instant), instead of SVC_TRAIN_DAYS; required, the same on each instance, with SVC_CLUSTER=on and the live venue' })),
    SVC_PAY_TO: Type.Optional(
      Type.String({ pattern: ADDRESS_SOURCE, 'x-expected': 'a 0x address of 40 hex digits', 'x-unset': 'per-call x402 payments are off; credits still work', description: 'x402 payment recipient on Base' }),
    ),
    SVC_FACILITATOR_URL: Url('x402 facilitator that verifies and settles payments (default: the built-in one)'),
    SVC_ADMIN_KEY: Type.Optional(
      Type.String({
        minLength: 1,
        'x-unset': 'GET /v1/admin/economy-funnel does not exist (404)',
        description: 'admin key for the operator funnel (`x-admin-key`); with it the funnel is computed and served',
      }),
    ),
    SVC_FUNNEL_INTERVAL_S: Type.Number({
      exclusiveMinimum: 0,
      default: 300,
      description: 'with SVC_ADMIN_KEY: seconds between funnel snapshots (a read older than this takes a fresh one first)',
    }),
    SVC_SIGNING_SECRET: Type.Optional(
      Type.String({
        minLength: 32,
        'x-unset': 'made once and kept in $SVC_DATA_DIR/delivery/signing-secret',
        description: 'deployment-wide hook signing secret (32 bytes: 64 hex digits, base64 or whsec_<base64>); without SVC_DELIVERY_KEY each hook secret is derived from it; with SVC_CLUSTER=on required, the same on every instance (the peer token of forwarded requests and the sign-in nonce key are derived from it)',
      }),
    ),
    SVC_ANSWER_KEY: Type.Optional(
      Type.String({
        pattern: '^0x[0-9a-fA-F]{64}$',
        'x-expected': 'a private key: 0x and 64 hex digits',
        'x-unset': 'made once and kept in $SVC_DATA_DIR/answer-keys/keyring.json (rotate: `svc answer-key rotate`)',
        description: 'secp256k1 private key (0x + 64 hex digits) that signs every served decision record (meta.signatures); a different key at the next start retires the previous one (its address and window stay published)',
      }),
    ),
    SVC_DELIVERY_KEY: Type.Optional(
      Type.String({
        minLength: 32,
        'x-unset': 'hook secrets are derived from the signing secret; URLs, push keys and contacts are stored plain',
        description:
          'AES-256-GCM key (64 hex digits or base64) that encrypts at rest each hook and endpoint secret, hook and endpoint URLs, push endpoints and keys, and contacts; keep it: a start without it refuses delivery',
      }),
    ),
    SVC_PUSH_SUBJECT: Type.Optional(
      Type.String({
        pattern: '^(mailto:|https://)\\S+$',
        'x-expected': 'a mailto: or https:// contact',
        'x-unset': 'push is not configured: /v1/push/config says so and the push channel fails visibly',
        description: 'VAPID contact (mailto: or https:) that turns browser push on',
      }),
    ),
    SVC_VAPID_PUBLIC_KEY: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]{86,88}$', 'x-expected': 'a base64url key of 86 to 88 characters', 'x-unset': 'made once and kept in $SVC_DATA_DIR/delivery/vapid.json', description: 'VAPID public key (base64url, with SVC_VAPID_PRIVATE_KEY)' })),
    SVC_VAPID_PRIVATE_KEY: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]{42,44}$', 'x-expected': 'a base64url key of 42 to 44 characters', 'x-unset': 'made once with the public key', description: 'VAPID private key (base64url)' })),
    SVC_DELIVERY_ALLOW: Type.Optional(
      Type.String({
        pattern: '^[0-9a-fA-F.:/]+(,[0-9a-fA-F.:/]+)*$',
        'x-expected': 'IP addresses or CIDR ranges separated by commas (127.0.0.0/8,::1)',
        'x-unset': 'none: every loopback, private, link-local and metadata address is refused',
        description: 'TEST ONLY: comma-separated CIDRs the URL guard lets through (local receivers in tests); never set in production',
      }),
    ),
    SVC_HOOK_RETRY_MS: Type.Integer({ minimum: 100, maximum: 600_000, default: 2000, description: 'wait before the one retry of a failed hook delivery' }),
    SVC_CONTACTS: StringEnum(['record', 'off'], { default: 'record', description: 'POST /v1/contacts records captures on the event log, or answers 503 CONTACTS_UNWIRED' }),
    SVC_OPS_TOKEN: Type.Optional(Type.String({ minLength: 1, 'x-unset': 'operator routes answer OPS_UNSET', description: 'operator token for `x-svc-ops` routes (grants, reversals, surge, /metrics)' })),
    SVC_BASE_URL: Type.Optional(
      Type.String({ pattern: '^https?://[^/\\s]+$', 'x-expected': 'an http:// or https:// origin without a path or trailing slash (https://api.example.com)', 'x-unset': 'http://HOST:PORT', description: 'public base URL in discovery documents and x402 resource URLs' }),
    ),
    SVC_DOCS_URL: Url('human documentation; `/docs` redirects there (else to /openapi.json)'),
    SVC_MAX_BODY_BYTES: Type.Integer({ minimum: 1024, maximum: 16 * 1024 * 1024, default: 64 * 1024, description: 'request body limit' }),
    SVC_STREAM_MAX_BUFFERED_BYTES: Type.Integer({ minimum: 16 * 1024, maximum: 256 * 1024 * 1024, default: 1024 * 1024, description: 'unsent bytes a live stream (SSE or WebSocket, e.g. /v1/streams/feed) may hold before it is dropped as a slow reader' }),
    SVC_STREAM_MAX_PER_IP: Type.Integer({ minimum: 1, maximum: 100_000, default: 16, description: 'live streams open at once per client address; one more is refused with 429 STREAM_CONNECTIONS_CAPPED' }),
    SVC_TRUST_PROXY: Type.Boolean({ default: false, description: 'trust `x-forwarded-for` for the client address (only behind a proxy you run)' }),
    SVC_UNIVERSE: Type.Optional(
      StringEnum(['replay', 'hyperliquid'], {
        'x-unset': 'hyperliquid with SVC_VENUE=hyperliquid, else replay',
        description: 'where the venue universe comes from: the ticks the service holds or live Hyperliquid',
      }),
    ),
    SVC_HL_BASE_URL: Url('Hyperliquid API base URL (default the public API, https://api.hyperliquid.xyz)'),
    SVC_HL_WS_URL: Type.Optional(
      Type.String({ pattern: '^wss?://[^\\s]+$', 'x-expected': 'a ws:// or wss:// URL', 'x-unset': 'wss://api.hyperliquid.xyz/ws', description: 'Hyperliquid websocket URL the live venue connector streams from (SVC_VENUE=hyperliquid)' }),
    ),
    SVC_COINGECKO_URL: Type.Optional(
      Type.String({ pattern: '^https?://[^\\s]+$', 'x-expected': URL_WORDS, 'x-unset': 'no market-cap source: /v1/marketcap answers PROVIDER_DOWN', description: 'CoinGecko API base URL for the market-cap list' }),
    ),
    SVC_COINGECKO_KEY: Type.Optional(Type.String({ minLength: 1, description: 'CoinGecko API key (sent in the demo or pro key header)' })),
    SVC_COINGECKO_KEY_HEADER: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9-]+$', 'x-expected': 'an HTTP header name (letters, digits and "-")', description: 'CoinGecko key header (default: demo or pro by URL)' })),
    SVC_WALLET_PROVIDER: StringEnum(['hyperliquid', 'none'], {
      default: 'none',
      description: 'wallet data for the wallet and risk routes and S09..S11 (none: those answer PROVIDER_DOWN)',
    }),
    SVC_ACCESS_LOG: Type.String({
      pattern: '^(all|off|0|1|0?\\.[0-9]*[1-9][0-9]*)$',
      'x-expected': 'all, off, or the share of answered requests to log, a decimal between 0 and 1 such as 0.1 (one in ten); 1 means all and 0 off',
      default: 'all',
      description: 'access log: one info line per answered request (`all`), none (`off`), or that share of them (`0.1`: one in ten; 5xx always); `1` and `0` mean all and off',
    }),
    SVC_MCP_ORIGINS: Type.Optional(
      Type.String({
        ...ORIGIN_LIST,
        description: 'comma-separated browser origins allowed to call the MCP endpoint besides its own (an Origin outside them gets 403)',
      }),
    ),
    SVC_CORS_ORIGINS: Type.Optional(
      Type.String({
        ...ORIGIN_LIST,
        'x-unset': 'no CORS: no Access-Control-* header is sent and a preflight is 405 like any OPTIONS',
        description:
          'comma-separated browser origins (scheme://host[:port]) whose pages may call the API cross-origin: preflights answered, PAYMENT-*, RateLimit-*, x-request-id and x-svc-* headers exposed; a preflight from any other origin is 403 ORIGIN_FORBIDDEN',
      }),
    ),
    SVC_SESSION_TTL_S: Type.Integer({ minimum: 60, maximum: 30 * 24 * 3600, default: 24 * 3600, description: 'lifetime of a bearer session opened with a sign-in-with-x proof (POST /v1/auth/session), seconds' }),
    SVC_RATE_IP_BURST: Type.Integer({ minimum: 1, default: 60, description: 'token bucket per client IP (callers without a session): burst' }),
    SVC_RATE_IP_PER_S: Type.Number({ exclusiveMinimum: 0, default: 20, description: 'token bucket per client IP: refill per second' }),
    SVC_RATE_PAYER_BURST: Type.Integer({ minimum: 1, default: 120, description: 'token bucket per proven payer (a bearer session, an x402 payment or a verified sign-in): burst' }),
    SVC_RATE_PAYER_PER_S: Type.Number({ exclusiveMinimum: 0, default: 40, description: 'token bucket per proven payer: refill per second' }),
    LOG_LEVEL: StringEnum(LOG_LEVELS, { default: 'info', description: 'pino log level' }),
    LOG_FORMAT: StringEnum(['pretty', 'json'], { default: 'pretty', description: 'pretty on a TTY (one line per record: time, level, component, message, key=value fields), else JSON lines; `json` forces JSON lines' }),
    SVC_HEAP_GROWTH_PERCENT: Type.Integer({
      minimum: 0,
      maximum: 300,
      default: 10,
      description:
        "`svc start`, once ready: how far V8 lets the JavaScript heap grow past what the last full collection kept before it collects again, in percent (V8's --heap-growing-percent); with it, one full collection just before ready, so the factor grows from the live state and not the restore's garbage; 0: V8's own choice (up to 4x) and no collection. The restored state is most of the heap (~600 MB at a million calls), and V8's choice held 1.5x it while the sink caught up after a restart (issue 31, README 'Restart from state snapshots'); lower costs more full collections",
    }),
    SVC_STOP_DEADLINE_MS: Type.Integer({
      minimum: 1000,
      maximum: 3_600_000,
      default: 30_000,
      description:
        'how long `svc start` gives a stop signal (SIGTERM/SIGINT) to end everything it started (backfill, warm-up, the bootstrap release, fits, record jobs, serving) before it exits 3 anyway, naming what still ran (the LOCK of its data folder then stays with the dead pid and the next start takes it over); the folder is free only once the process has exited',
    }),
    SVC_PROGRESS_MS: Type.Integer({ minimum: 1, default: 5000, description: 'how often long jobs print a progress line when not on a TTY' }),
    CI: Type.Boolean({ default: false, description: 'set by CI: progress prints lines, never a bar' }),
  },
  {
    additionalProperties: true,
    if: { required: ['SVC_LOG'], properties: { SVC_LOG: { const: 'kafka' } } },
    then: { required: ['KAFKA_BROKERS'] },
  },
)

export type AppConfig = Static<typeof ENV_SCHEMA>

/** The environment variables of one schema (the whole one, or a part picked for a light command). */
function readEnv(schema: TSchema & { properties: Record<string, TSchema> }, env: Readonly<Record<string, string | undefined>>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [name, s] of Object.entries(schema.properties)) {
    const raw = env[name]
    // An empty variable is an unset one (`SVC_PAY_TO= npm start`).
    if (raw === undefined || raw === '') continue
    const type = (s as { type?: string }).type
    if ((type === 'integer' || type === 'number') && /^\s*-?\d+(\.\d+)?([eE][-+]?\d+)?\s*$/.test(raw)) out[name] = Number(raw)
    else if (type === 'boolean' && /^(1|0|true|false)$/i.test(raw)) out[name] = raw === '1' || raw.toLowerCase() === 'true'
    else out[name] = raw
  }
  return out
}

/** Validates the environment; throws an OptionsError naming every bad variable (`environment/<NAME>: ...`). */
export function loadConfig(env: Readonly<Record<string, string | undefined>>): AppConfig {
  return validateOptions<AppConfig>('environment', ENV_SCHEMA, readEnv(ENV_SCHEMA, env))
}

/** The picked sub-schemas by their names, so each compiles once (the validator caches by schema object). */
const picked = new Map<string, TSchema & { properties: Record<string, TSchema> }>()

/** Some variables only, validated by the same schema (a light command checks what it reads). */
function pick<K extends keyof AppConfig>(env: Readonly<Record<string, string | undefined>>, names: K[]): Pick<AppConfig, K> {
  const key = names.join(',')
  let schema = picked.get(key)
  if (!schema) picked.set(key, (schema = Type.Pick(ENV_SCHEMA, names)))
  return validateOptions<Pick<AppConfig, K>>('environment', schema, readEnv(schema, env))
}

/**
 * The absolute training cut, or null (SVC_TRAIN_DAYS then decides). The schema checks the RFC 3339 form; an instant
 * the form admits but the clock cannot place (a leap second) is refused the same way, naming the variable.
 */
export function trainUntilOf(c: Pick<AppConfig, 'SVC_TRAIN_UNTIL'>): number | null {
  if (c.SVC_TRAIN_UNTIL === undefined) return null
  const at = Date.parse(c.SVC_TRAIN_UNTIL)
  if (!Number.isFinite(at)) throw new OptionsError('environment', [{ path: '/SVC_TRAIN_UNTIL', keyword: 'format', message: 'must be an instant the clock can place' }])
  return at
}

/** The logging part only: every command configures logging before it loads the modules that log. */
export function loggingFromEnv(env: Readonly<Record<string, string | undefined>>): LoggingOptions {
  const c = pick(env, ['LOG_LEVEL', 'LOG_FORMAT'])
  return { level: c.LOG_LEVEL, format: c.LOG_FORMAT }
}

export function progressOf(c: Pick<AppConfig, 'SVC_PROGRESS_MS' | 'CI'>): ProgressOptions {
  return { everyMs: c.SVC_PROGRESS_MS, plain: c.CI }
}

/** The progress part only (light commands that need nothing else of the environment). */
export function progressFromEnv(env: Readonly<Record<string, string | undefined>>): ProgressOptions {
  return progressOf(pick(env, ['SVC_PROGRESS_MS', 'CI']))
}

/** SVC_ACCESS_LOG as the share of answered requests the access log writes (serving config accessLog). */
export function accessLogShareOf(c: Pick<AppConfig, 'SVC_ACCESS_LOG'>): number {
  if (c.SVC_ACCESS_LOG === 'all') return 1
  if (c.SVC_ACCESS_LOG === 'off') return 0
  return Number(c.SVC_ACCESS_LOG)
}

export function topicNamesOf(c: AppConfig): TopicNames {
  return { ticks: c.SVC_TOPIC_TICKS, decisions: c.SVC_TOPIC_DECISIONS, outcomes: c.SVC_TOPIC_OUTCOMES, draws: c.SVC_TOPIC_DRAWS, calls: c.SVC_TOPIC_CALLS, callOptIns: c.SVC_TOPIC_CALL_OPT_INS, funnel: c.SVC_TOPIC_FUNNEL }
}

/** How long ticks stay in the log: the longest feature window plus the configured margin (issue 31 item 3). */
export function tickRetentionMsOf(c: Pick<AppConfig, 'SVC_TICK_RETENTION_MARGIN_DAYS'>): number {
  return LONGEST_FEATURE_WINDOW_MS + Math.round(c.SVC_TICK_RETENTION_MARGIN_DAYS * 86_400_000)
}

/** The V8 flags `svc start` sets at its start (SVC_HEAP_GROWTH_PERCENT; none when V8 chooses). */
export function v8FlagsOf(c: Pick<AppConfig, 'SVC_HEAP_GROWTH_PERCENT'>): string[] {
  return c.SVC_HEAP_GROWTH_PERCENT > 0 ? [`--heap-growing-percent=${c.SVC_HEAP_GROWTH_PERCENT}`] : []
}

/** The event log of this configuration: the embedded log under <data dir>/log, or Kafka. */
export function eventLogOf(c: AppConfig): OpenEventLogOptions {
  if (c.SVC_LOG === 'kafka') {
    return {
      kind: 'kafka',
      kafka: {
        brokers: c.KAFKA_BROKERS!.split(',').map((b) => b.trim()),
        clientId: c.KAFKA_CLIENT_ID,
        topicPrefix: c.KAFKA_TOPIC_PREFIX,
        replicationFactor: c.KAFKA_REPLICATION_FACTOR,
        sessionTimeoutMs: c.KAFKA_SESSION_TIMEOUT_MS,
        ...(c.KAFKA_INSTANCE_ID ? { instanceId: c.KAFKA_INSTANCE_ID } : {}),
        ...(c.SVC_CLUSTER === 'on' ? { replicaGroups: true } : {}),
      },
    }
  }
  return { kind: 'embedded', dir: join(resolve(c.SVC_DATA_DIR), 'log') }
}

/** One line per failure, for the command line. */
export function configErrorLine(err: OptionsError): string {
  return `invalid ${err.root}: ${describeFieldErrors(err.root, err.errors)}`
}

export type { FieldError }

// ---------------------------------------------------------------- README's table

const cell = (s: string) => s.replace(/\|/g, '\\|')

function defaultText(s: Record<string, unknown>): string {
  if (s['x-unset'] !== undefined) return `unset: ${String(s['x-unset'])}`
  if (s.default === undefined) return 'unset'
  if (s.default === '') return '`""`'
  return `\`${String(s.default)}\``
}

/** README's environment table, generated from the schema (`svc docs env`). */
export function renderEnvTable(): string {
  const rows = Object.entries(ENV_SCHEMA.properties).map(([name, s]) => {
    const schema = s as unknown as Record<string, unknown>
    const allowed = Array.isArray(schema.enum) ? ` (${(schema.enum as string[]).map((v) => `\`${v}\``).join(', ')})` : ''
    return `| \`${name}\` | ${cell(defaultText(schema))} | ${cell(String(schema.description ?? ''))}${allowed} |`
  })
  return ['| variable | default | meaning |', '|---|---|---|', ...rows].join('\n')
}

export const ENV_TABLE_BEGIN = '<!-- env table: generated from app/config.ts by `svc docs env`; do not edit by hand -->'
export const ENV_TABLE_END = '<!-- end of env table -->'
