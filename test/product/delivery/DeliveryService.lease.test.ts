/**
 * Delivery on several instances (issue 32): two DeliveryServices, each on its own KafkaLog with replica groups (every
 * instance reads every journal partition) and one shared dispatch lease (pipeline/log/KafkaLease.ts), each fed the
 * same decisions and resolutions by its own outcome bus, as two instances' engines derive them from one log.
 * - A hook armed on either instance is in both books; a resolution fires it once across the two (a local receiver
 *   counts), from the lease's holder.
 * - The holder stops: the other takes delivery over, reads the attempts the first recorded (nothing delivered again)
 *   and delivers what the record lacks, once.
 * - The new holder's first catch-up with the book fails (its log refuses a read once): it tries again and delivers.
 */
import { join } from 'node:path'
import t from 'tap'
import { UnitOfWork } from '../../../pipeline/journal/UnitOfWork.ts'
import type { PaidCall } from '../../../pipeline/journal/PaidCall.ts'
import { Journal } from '../../../pipeline/journal/Journal.ts'
import { KafkaLease } from '../../../pipeline/log/KafkaLease.ts'
import type { ConsumerOptions, EventLog, LogConsumer, LogProducer, TopicSpec } from '../../../pipeline/log/EventLog.ts'
import { KafkaLog } from '../../../pipeline/log/KafkaLog.ts'
import { LogError } from '../../../pipeline/log/LogError.ts'
import { DELIVERY_ATTEMPTS, type AttemptRow } from '../../../pipeline/records/deliveryRecord.ts'
import type { LedgerDecision } from '../../../pipeline/records/decisionRecord.ts'
import { DeliveryService } from '../../../product/delivery/DeliveryService.ts'
import { HookSigner } from '../../../product/delivery/HookSigner.ts'
import { PinnedHttpClient } from '../../../product/delivery/PinnedHttpClient.ts'
import { UrlGuard } from '../../../product/delivery/UrlGuard.ts'
import { TestLedger } from '../../helpers/delivery/ledgerBus.ts'
import { startReceiver } from '../../helpers/delivery/receivers.ts'
import { kafkaBrokers, kafkaSkip, type TapTest } from '../../helpers/logs.ts'
import { makeTempDir } from '../../helpers/tmp.ts'
import { until } from '../../helpers/until.ts'

const skip = kafkaSkip(t)
const SESSION_MS = 6_000
const PAYER = '0x' + '7'.repeat(40)
/** Every instance of a cluster signs with the deployment's one secret (SVC_SIGNING_SECRET), so either can deliver. */
const SIGNING_SECRET = 'c'.repeat(64)
const NOW = Date.parse('2026-03-02T10:00:00.000Z')

/**
 * An instance's log that, once armed, refuses its next end-offset read as a Kafka wait that timed out does (LOG_IO,
 * retryable); every other call, and every read after that one, goes to the KafkaLog underneath.
 */
class RefusesOneRead implements EventLog {
  armed = false
  refused: string[] = []
  constructor(private readonly inner: EventLog) {}
  get kind(): EventLog['kind'] {
    return this.inner.kind
  }
  ensureTopics(specs: TopicSpec[]): Promise<void> {
    return this.inner.ensureTopics(specs)
  }
  partitionsOf(topic: string): Promise<number> {
    return this.inner.partitionsOf(topic)
  }
  endOffsets(topic: string): Promise<number[]> {
    if (!this.armed) return this.inner.endOffsets(topic)
    this.armed = false
    this.refused.push(topic)
    return Promise.reject(new LogError('LOG_IO', `reading the end offsets of ${topic} timed out`, { retryable: true }))
  }
  lastRecords(topic: string) {
    return this.inner.lastRecords(topic)
  }
  createProducer(): Promise<LogProducer> {
    return this.inner.createProducer()
  }
  createConsumer(options: ConsumerOptions): Promise<LogConsumer> {
    return this.inner.createConsumer(options)
  }
  consumerLag() {
    return this.inner.consumerLag()
  }
  consumerFaults() {
    return this.inner.consumerFaults?.() ?? []
  }
  close(): Promise<void> {
    return this.inner.close()
  }
}

interface Instance {
  name: string
  log: KafkaLog
  /** What the instance's delivery reads and writes through: `log`, with a read refused once when armed. */
  deliveryLog: RefusesOneRead
  lease: KafkaLease
  ledger: TestLedger
  delivery: DeliveryService
  stop(): Promise<void>
}

let paymentSeq = 0
function payment(): PaidCall & { unit: UnitOfWork } {
  return { kind: 'paid', payment_id: `cr_lease_${++paymentSeq}`, rail: 'credits', payer: PAYER, unit: new UnitOfWork() }
}

async function instance(t: TapTest, name: string, prefix: string): Promise<Instance> {
  const dir = await makeTempDir(t, `svc-delivery-lease-${name}-`)
  const log = await KafkaLog.connect({ brokers: kafkaBrokers()!, clientId: `svc-test-${name}`, topicPrefix: prefix, instanceId: name, sessionTimeoutMs: SESSION_MS, replicaGroups: true })
  const lease = await KafkaLease.open(log, 'delivery', { instance: name, url: null })
  const ledger = new TestLedger(NOW)
  const deliveryLog = new RefusesOneRead(log)
  const delivery = await DeliveryService.open({
    log: deliveryLog, ledger, clock: { now: () => NOW },
    guard: UrlGuard.create({ allow: ['127.0.0.1/32'] }),
    http: PinnedHttpClient.create({ timeoutMs: 2000 }),
    push: null,
    signer: await HookSigner.open({ dir, signingSecret: SIGNING_SECRET }),
    retryDelayMs: 50,
    dispatchLease: lease,
  })
  let stopped = false
  const stop = async () => {
    if (stopped) return
    stopped = true
    await delivery.close()
    await lease.close()
    await log.close()
  }
  t.teardown(stop)
  return { name, log, deliveryLog, lease, ledger, delivery, stop }
}

/** Both engines derive the same decision and the same resolution from the log: each bus publishes its own copy. */
function decide(instances: Instance[]): LedgerDecision {
  const d = instances[0]!.ledger.addDecision()
  for (const i of instances.slice(1)) {
    i.ledger.decisionsById.set(d.decision_id, d)
    i.ledger.decisions.publish(d)
  }
  return d
}

function resolve(instances: Instance[], d: LedgerDecision): void {
  for (const i of instances) i.ledger.resolve(d, 'obtains')
}

async function attemptRows(log: KafkaLog): Promise<AttemptRow[]> {
  const rows: AttemptRow[] = []
  const j = await Journal.open({ log, def: DELIVERY_ATTEMPTS })
  const f = await j.follow(`t.rows.${Math.random()}`, (r) => rows.push(r))
  await f.stop()
  return rows
}

/** Two instances on one prefix, once exactly one of them holds the delivery lease and delivers. */
async function twoInstances(t: TapTest): Promise<{ a: Instance; b: Instance; both: Instance[]; holder: Instance; other: Instance }> {
  const prefix = `dl${Math.random().toString(16).slice(2, 10)}.`
  const a = await instance(t, 'a', prefix)
  const b = await instance(t, 'b', prefix)
  const both = [a, b]
  await until('one instance holds the delivery lease and delivers', () => both.filter((i) => i.lease.held).length === 1 && both.filter((i) => i.delivery.dispatching).length === 1, 30_000)
  const holder = both.find((i) => i.lease.held)!
  const other = both.find((i) => i !== holder)!
  return { a, b, both, holder, other }
}

t.test('one delivery per resolution across two instances; the other takes delivery over when the holder stops', { skip }, async (t) => {
  const { a, b, both, holder, other } = await twoInstances(t)
  t.equal(other.delivery.dispatching, false, 'the instance without the lease does not deliver')

  const rx = await startReceiver(t)
  const d1 = decide(both)
  const d2 = decide(both)
  // One hook armed on each instance: registrations are journals every replica reads.
  const armedOn = async (i: Instance, d: LedgerDecision, path: string) => {
    const p = payment()
    const armed = (await i.delivery.armHook({ decision_id: d.decision_id, url: `${rx.url}${path}` }, p, p.unit))!
    await p.unit.commit()
    rx.secrets.set(path, String(armed.secret))
    return armed
  }
  await armedOn(other, d1, '/one')
  await armedOn(holder, d2, '/two')
  await until('both books hold both hooks', () => a.delivery.book.hooks.size === 2 && b.delivery.book.hooks.size === 2, 30_000)

  resolve(both, d1)
  await rx.waitFor(1)
  await Promise.all(both.map((i) => i.delivery.idle()))
  await new Promise((r) => setTimeout(r, 1_000))
  t.equal(rx.received.length, 1, 'the resolution fired its hook once across the two instances')
  t.equal(rx.received[0]!.path, '/one')
  t.equal(rx.received[0]!.verified, true, 'signed with the deployment secret, verified by the receiver')

  // ---- the holder stops; the other takes over ----
  await holder.stop()
  await until('the other instance took delivery over', () => other.delivery.dispatching, SESSION_MS + 20_000)
  t.pass('the remaining instance delivers')
  await other.delivery.idle()
  t.equal(rx.received.length, 1, 'taking over re-delivered nothing: the book read the attempt the first holder recorded')

  other.ledger.resolve(d2, 'obtains')
  await rx.waitFor(2)
  await other.delivery.idle()
  t.same(rx.received.map((r) => r.path), ['/one', '/two'], 'the next resolution is delivered once, by the new holder')
  t.ok(rx.received.every((r) => r.verified === true))
  const rows = await attemptRows(other.log)
  t.same(rows.map((r) => r.status).sort(), ['delivered', 'delivered'], 'one attempt row per delivery')
  t.equal(new Set(rows.map((r) => r.delivery_id)).size, 2)
})

t.test('a new holder whose first catch-up with the book fails tries again, then delivers', { skip }, async (t) => {
  const { a, b, both, holder, other } = await twoInstances(t)

  const rx = await startReceiver(t)
  const d = decide(both)
  const p = payment()
  const armed = (await holder.delivery.armHook({ decision_id: d.decision_id, url: `${rx.url}/after-retry` }, p, p.unit))!
  await p.unit.commit()
  rx.secrets.set('/after-retry', String(armed.secret))
  await until('both books hold the hook', () => a.delivery.book.hooks.size === 1 && b.delivery.book.hooks.size === 1, 30_000)

  other.deliveryLog.armed = true
  await holder.stop()
  await until('the other instance took the lease', () => other.lease.held, SESSION_MS + 20_000)
  await until('the other instance took delivery over after its catch-up failed once', () => other.delivery.dispatching, 30_000)
  t.equal(other.deliveryLog.refused.length, 1, 'its first catch-up failed: a read of the book\'s journals was refused')

  other.ledger.resolve(d, 'obtains')
  await rx.waitFor(1)
  await other.delivery.idle()
  t.same(rx.received.map((r) => r.path), ['/after-retry'], 'the resolution is delivered, once, by the holder that retried its catch-up')
  t.equal(rx.received[0]!.verified, true)
})
