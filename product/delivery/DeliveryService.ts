/**
 * Delivery (spec, What the service does 8; Delivery resources; Events 1-4; Authentication 5 and 7; States: Resolution
 * hook, Outcome hook endpoint, Push device; Limits): resolution hooks, outcome hook endpoints, push devices, follows,
 * alert watches and contact capture, with one append-only record row per delivery attempt.
 *
 *   const delivery = await DeliveryService.open({ log, ledger, guard, http, push, signer, clock })
 *   Server.start({ ..., services: { delivery } })
 *   await delivery.close()
 *
 * This class opens and closes delivery and is what the routes call (Delivery.ts); each job is its own module:
 * - Registrations.ts: hooks, endpoints, follows, alert watches and asks, each change a registration record;
 * - PushDevices.ts: push devices and the push deliveries to them;
 * - Contacts.ts: contact capture;
 * - Dispatch.ts: what each event of the outcome bus becomes (which targets, which channels);
 * - Attempts.ts: the queue of deliveries, one record row per attempt, the one retry;
 * - DeliveryBook.ts: the projection all of them read, built from the journals; with `checkpoints` (issue 31) a start
 *   loads its newest valid snapshot and reads only the tail, a snapshot is written every `everyMs` and at close and
 *   the followers commit its positions (none while a write of this process is unsettled:
 *   pipeline/state/CheckpointedFollowers.ts); without, it is rebuilt at every start.
 *
 * How a resolution reaches a receiver: registrations, asks, attempts and contacts are journals (pipeline/records/
 * deliveryRecord.ts) rebuilt into the DeliveryBook at every start, before the outcome bus is subscribed; the bus
 * (engine/LedgerBus.ts) replays every resolution on subscribe, and Dispatch plans each one's deliveries under stable
 * ids, so what the record lacks is delivered (Attempts). Every attempt re-checks its URL with the guard and connects
 * to the checked address.
 */
import { codedError } from '../../common/CodedError.ts'
import type { Clock } from '../../common/Clock.ts'
import { childLogger } from '../../common/logger.ts'
import type { Subscription } from '../../engine/LedgerBus.ts'
import { Journal } from '../../pipeline/journal/Journal.ts'
import type { PaidCall } from '../../pipeline/journal/PaidCall.ts'
import type { UnitOfWork } from '../../pipeline/journal/UnitOfWork.ts'
import type { EventLog } from '../../pipeline/log/EventLog.ts'
import type { LedgerDecision } from '../../pipeline/records/decisionRecord.ts'
import { DELIVERY_ASKS, DELIVERY_ATTEMPTS, DELIVERY_CONTACTS, DELIVERY_REGISTRATIONS } from '../../pipeline/records/deliveryRecord.ts'
import { DEFAULT_PARTITIONS } from '../../pipeline/topics.ts'
import { CheckpointedFollowers, followOwnWrites } from '../../pipeline/state/CheckpointedFollowers.ts'
import type { RestoredState } from '../../pipeline/state/restoreState.ts'
import type { CheckpointSettings } from '../../pipeline/state/StateStore.ts'
import type { Lease } from '../../pipeline/log/Lease.ts'
import { RetryPolicy } from '../../pipeline/work/RetryPolicy.ts'
import { Attempts } from './Attempts.ts'
import { Contacts } from './Contacts.ts'
import { DELIVERY_BOOK_SCHEMA, DeliveryBook, type EndpointState } from './DeliveryBook.ts'
import { Dispatch } from './Dispatch.ts'
import type { HookSigner } from './HookSigner.ts'
import type { DeliveryLedger, HookTransport, PushSender, PushSubscription, UrlChecker } from './ports.ts'
import { PushDevices } from './PushDevices.ts'
import { Registrations } from './Registrations.ts'
import type {
  AlertDeleted, AlertKind, AlertView, ContactView, DeviceView, EndpointView, FollowRemoved, FollowView, HookArmed, HookRequest, PushConfig, SubjectKind,
} from './schemas.ts'

export { ALERT_CAP, ENDPOINT_CAP } from './Registrations.ts'

const log = childLogger('delivery')

/** A new holder's catch-up with the book, tried again until it succeeds or the takeover is aborted. */
const CATCH_UP_RETRY = new RetryPolicy({ attempts: Number.POSITIVE_INFINITY, baseMs: 200, capMs: 5_000 })

export interface DeliveryOptions {
  log: EventLog
  ledger: DeliveryLedger
  guard: UrlChecker
  http: HookTransport
  /** null: push is not configured on this deployment (its channel fails visibly). */
  push: PushSender | null
  /** Signs deliveries; its cipher (the deployment key) also seals URLs, push keys and contacts at rest. */
  signer: HookSigner
  /** Wall clock (registration stamps, the 30-day window, signature timestamps). */
  clock: Clock
  /** Contacts are recorded (POST /v1/contacts); false: 503 CONTACTS_UNWIRED. */
  recordContacts?: boolean
  /** Wait before the one retry (ms). Default 2000. */
  retryDelayMs?: number
  /** Attempts in flight at once. Default 64. */
  concurrency?: number
  partitions?: number
  /** Consumer group prefix of the followers (default 'svc.delivery'); also the snapshot's store name. */
  groupId?: string
  /** Snapshot the book and start from the newest valid snapshot (absent: rebuild from the log at every open). */
  checkpoints?: CheckpointSettings | null
  /**
   * Several instances on one cluster (issue 32): only the holder of this lease delivers (it subscribes to the outcome
   * bus), so each resolution's hooks fire once across the cluster; every instance keeps the whole book and takes
   * registrations. Absent: this instance delivers (it is the only one).
   */
  dispatchLease?: Lease | null
}

/**
 * The deployment has records sealed under a key it was not given (SVC_DELIVERY_KEY unset or changed): delivery cannot
 * sign, reach or list them, so it does not start (docs/decisions.md); the composition root keeps serving without it.
 */
export class DeliveryKeyMissing extends codedError({
  DELIVERY_KEY_MISSING: { retryable: false, meaning: 'delivery records are sealed under a key this start was not given (SVC_DELIVERY_KEY unset or another)' },
}) {
  constructor(readonly unreadable: number, readonly first: string | null, keyConfigured: boolean) {
    super(
      'DELIVERY_KEY_MISSING',
      `${unreadable} delivery record(s) (first: ${first}) are sealed under a key this start ${keyConfigured ? 'does not have: SVC_DELIVERY_KEY differs from the one they were written with' : 'lacks: set SVC_DELIVERY_KEY to the key they were written with'}`,
    )
  }
}

export class DeliveryService {
  readonly book: DeliveryBook
  private followers: CheckpointedFollowers | null = null
  private subscriptions: Subscription[] = []
  private closed = false
  /** Stops listening to the dispatch lease (null without one). */
  private offLease: (() => void) | null = null
  /** The takeover in progress (catching up with the book, then subscribing), aborted when the lease moves on. */
  private taking: AbortController | null = null
  private readonly attempts: Attempts
  private readonly registrations: Registrations
  private readonly devices: PushDevices
  private readonly contacts: Contacts
  private readonly dispatch: Dispatch

  private constructor(
    private readonly options: DeliveryOptions,
    journals: {
      registrations: Journal<typeof DELIVERY_REGISTRATIONS.schema>
      asks: Journal<typeof DELIVERY_ASKS.schema>
      attempts: Journal<typeof DELIVERY_ATTEMPTS.schema>
      contacts: Journal<typeof DELIVERY_CONTACTS.schema>
    },
  ) {
    const { signer, clock } = options
    this.book = new DeliveryBook(signer.cipher)
    this.attempts = new Attempts(this.book, journals.attempts, clock, options.retryDelayMs ?? 2000, options.concurrency ?? 64)
    this.registrations = new Registrations(this.book, journals.registrations, journals.asks, {
      ledger: options.ledger, guard: options.guard, signer, clock, isResolved: (id) => this.dispatch.isResolved(id), pushConfigured: options.push !== null,
    })
    this.devices = new PushDevices(this.book, this.registrations, this.attempts, options.guard, options.push)
    this.contacts = new Contacts(this.book, journals.contacts, signer.cipher, clock, options.recordContacts !== false)
    this.dispatch = new Dispatch(this.book, this.attempts, this.registrations, this.devices, { guard: options.guard, http: options.http, signer, clock })
  }

  static async open(options: DeliveryOptions): Promise<DeliveryService> {
    const partitions = { partitions: options.partitions ?? DEFAULT_PARTITIONS }
    const [registrations, asks, attempts, contacts] = await Promise.all([
      Journal.open({ log: options.log, def: DELIVERY_REGISTRATIONS, ...partitions }),
      Journal.open({ log: options.log, def: DELIVERY_ASKS, ...partitions }),
      Journal.open({ log: options.log, def: DELIVERY_ATTEMPTS, ...partitions }),
      Journal.open({ log: options.log, def: DELIVERY_CONTACTS, ...partitions }),
    ])
    const s = new DeliveryService(options, { registrations, asks, attempts, contacts })
    const group = options.groupId ?? 'svc.delivery'
    try {
      s.followers = await CheckpointedFollowers.open({
        log: options.log,
        store: { name: group, schema: DELIVERY_BOOK_SCHEMA, rows: () => s.book.rows(), load: (rows) => s.book.load(rows) },
        checkpoints: options.checkpoints,
        // A book missing records it could not open is never snapshotted: a start with the right key must rebuild them.
        snapshotWhen: () => s.book.unreadable === 0,
        logger: log,
        journals: [
          followOwnWrites(registrations, { group: `${group}.registrations`, what: 'registration', logger: log }, (r) => s.book.applyRegistration(r)),
          followOwnWrites(asks, { group: `${group}.asks`, what: 'ask', logger: log }, (r) => s.book.applyAsk(r)),
          followOwnWrites(attempts, { group: `${group}.attempts`, what: 'attempt', logger: log }, (r) => s.book.applyAttempt(r)),
          followOwnWrites(contacts, { group: `${group}.contacts`, what: 'contact', logger: log }, (r) => s.book.applyContact(r)),
        ],
      })
    } catch (err) {
      await s.close()
      throw err
    }
    if (s.book.unreadable > 0) {
      await s.close()
      throw new DeliveryKeyMissing(s.book.unreadable, s.book.firstUnreadable, options.signer.cipher !== null)
    }
    // After the book is whole: the bus replays every resolution and decision, and what the record lacks is delivered.
    const lease = options.dispatchLease ?? null
    if (lease === null) s.startDispatch()
    else {
      s.offLease = lease.onChange((held) => (held ? void s.takeDispatch() : s.stopDispatch()))
      if (lease.held) await s.takeDispatch()
      else log.info('another instance holds the delivery lease: this one keeps the book and delivers if it takes the lease over')
    }
    const from = s.restored?.restored ? 'its snapshot and the log tail' : 'the log'
    log.info({ hooks: s.book.hooks.size, endpoints: s.book.endpoints.size, devices: s.book.devices.size, deliveries: s.book.deliveries.size }, `delivery book built from ${from}`)
    return s
  }

  /** How the book started: restored from its snapshot, or rebuilt and why (null without checkpoints). */
  get restored(): RestoredState | null {
    return this.followers?.restored ?? null
  }

  get pushConfigured(): boolean {
    return this.options.push !== null
  }

  // ------------------------------------------------------------ what the routes call (Delivery.ts)

  pushConfig(): PushConfig {
    return this.devices.pushConfig()
  }

  checkHook(input: HookRequest): Promise<LedgerDecision | null> {
    return this.registrations.checkHook(input)
  }

  armHook(input: HookRequest, payment: PaidCall, unit: UnitOfWork): Promise<HookArmed | null> {
    return this.registrations.armHook(input, payment, unit)
  }

  checkEndpoint(payer: string, url: string): Promise<EndpointState | null> {
    return this.registrations.checkEndpoint(payer, url)
  }

  newEndpointId(): string {
    return this.registrations.newEndpointId()
  }

  registerEndpoint(payer: string, url: string, endpointId: string, payment: PaidCall, unit: UnitOfWork): Promise<{ replayed: boolean; endpoint: EndpointView }> {
    return this.registrations.registerEndpoint(payer, url, endpointId, payment, unit)
  }

  endpointReplay(e: EndpointState): EndpointView {
    return this.registrations.endpointReplay(e)
  }

  listEndpoints(payer: string): EndpointView[] {
    return this.registrations.listEndpoints(payer)
  }

  pauseEndpoint(payer: string, endpointId: string): Promise<EndpointView | null> {
    return this.registrations.pauseEndpoint(payer, endpointId)
  }

  deviceId(payer: string, endpoint: string): string {
    return this.devices.deviceId(payer, endpoint)
  }

  registerDevice(payer: string, sub: PushSubscription): Promise<{ created: boolean; device: DeviceView }> {
    return this.devices.registerDevice(payer, sub)
  }

  listDevices(payer: string): DeviceView[] {
    return this.devices.listDevices(payer)
  }

  disableDevice(payer: string, deviceId: string): Promise<DeviceView> {
    return this.devices.disableDevice(payer, deviceId)
  }

  followId(payer: string, q: { question_id: string; subject_kind: SubjectKind; subject: string }): string {
    return this.registrations.followId(payer, q)
  }

  setFollow(payer: string, q: { question_id: string; subject_kind: SubjectKind; subject: string; channels: number }): Promise<{ created: boolean; follow: FollowView }> {
    return this.registrations.setFollow(payer, q)
  }

  listFollows(payer: string): FollowView[] {
    return this.registrations.listFollows(payer)
  }

  removeFollow(payer: string, followId: string): Promise<FollowRemoved> {
    return this.registrations.removeFollow(payer, followId)
  }

  alertId(payer: string, a: { kind: AlertKind; question_id: string | null; subject_kind: SubjectKind; subject: string; threshold: number | null }): string {
    return this.registrations.alertId(payer, a)
  }

  createAlert(
    payer: string,
    a: { kind: AlertKind; question_id: string | null; subject_kind: SubjectKind; subject: string; threshold: number | null; cooldown_s: number },
  ): Promise<{ created: boolean; alert: AlertView }> {
    return this.registrations.createAlert(payer, a)
  }

  listAlerts(payer: string): AlertView[] {
    return this.registrations.listAlerts(payer)
  }

  deleteAlert(payer: string, alertId: string): Promise<AlertDeleted> {
    return this.registrations.deleteAlert(payer, alertId)
  }

  /** The decisions `payer` asked and paid for (delivery.asks), in no particular order. */
  asksOf(payer: string): readonly string[] {
    return this.book.asksByPayer.get(payer.toLowerCase()) ?? []
  }

  recordAskIn(unit: UnitOfWork, payment: PaidCall, decisionId: string): void {
    this.registrations.recordAskIn(unit, payment, decisionId)
  }

  recordContact(input: { contact: string; consent: true; source: string | null; seat: string | null }): Promise<{ created: boolean; contact: ContactView }> {
    return this.contacts.recordContact(input)
  }

  // ------------------------------------------------------------ lifecycle

  /** Whether this instance delivers now (it holds the dispatch lease, or has none). */
  get dispatching(): boolean {
    return this.subscriptions.length > 0
  }

  private startDispatch(): void {
    if (this.closed || this.subscriptions.length > 0) return
    const { ledger } = this.options
    this.subscriptions.push(
      ledger.resolutions.subscribe('delivery', (e) => this.dispatch.onResolution(e)),
      ledger.decisions.subscribe('delivery.alerts', (d) => this.dispatch.onDecision(d)),
    )
  }

  /**
   * This instance took the dispatch lease: the book first reads every attempt the previous holder recorded (so a
   * delivery it made is not made again), then the bus replays every resolution and what the record lacks is
   * delivered, as at a restart. A delivery the previous holder sent but had not recorded when it died is sent again,
   * under the same delivery id (receivers deduplicate on it; docs/decisions.md). A catch-up that fails (the broker
   * away, a read refused) is tried again, the wait growing to CATCH_UP_RETRY's cap, until the book has caught up, the
   * lease moves on or the service closes: a holder that gave up would deliver nothing until the lease moved.
   *
   * Resolves after the first attempt (open() awaits it: a start is never held up by the retries, which go on under
   * `taking` and end with it).
   */
  private takeDispatch(): Promise<void> {
    if (this.closed || this.taking || this.subscriptions.length > 0) return Promise.resolve()
    const taking = (this.taking = new AbortController())
    let firstAttemptEnded = () => {}
    const firstAttempt = new Promise<void>((resolve) => (firstAttemptEnded = resolve))
    const takeOver = async () => {
      try {
        await CATCH_UP_RETRY.run(async () => this.followers?.caughtUp(this.options.log, taking.signal), {
          signal: taking.signal,
          // Whatever kept the book behind may be over at the next attempt; only losing the lease or closing ends it.
          retryable: () => true,
          onRetry: (err, attempt, waitMs) => {
            log.warn({ err, attempt, waitMs }, 'taking delivery over: the book did not catch up; not delivering yet, retrying')
            firstAttemptEnded()
          },
        })
        if (!taking.signal.aborted) {
          this.startDispatch()
          log.info('this instance holds the delivery lease: it delivers')
        }
      } catch (err) {
        if (!taking.signal.aborted) log.warn({ err }, 'taking delivery over failed: the book did not catch up; not delivering')
      } finally {
        if (this.taking === taking) this.taking = null
        firstAttemptEnded()
      }
    }
    void takeOver()
    return firstAttempt
  }

  /** The lease moved to another instance: nothing new is planned here; attempts already in flight finish. */
  private stopDispatch(): void {
    this.taking?.abort()
    if (this.subscriptions.length === 0) return
    for (const s of this.subscriptions.splice(0)) s.unsubscribe()
    log.info('the delivery lease moved to another instance: this one no longer delivers')
  }

  /** Resolves once nothing is queued, in flight or waiting for its retry (tests and benchmarks). */
  async idle(): Promise<void> {
    for (const s of this.subscriptions) await s.idle()
    await this.attempts.idle()
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.offLease?.()
    this.taking?.abort()
    for (const s of this.subscriptions) s.unsubscribe()
    await this.attempts.close()
    await this.followers?.stop()
  }
}
