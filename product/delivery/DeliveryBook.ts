/**
 * Delivery's projection: the current state of every target (the fold of its registration records in log order), who
 * paid for which decision, what the delivery record says of each delivery, and which contacts are recorded. Rebuilt
 * from the journals at every start; nothing here is stored anywhere else.
 *
 * With a deployment key the records hold URLs, push keys and contacts sealed (common/AtRestCipher.ts; sealing.ts says
 * which fields): the book opens them, so everything in memory is plain. A record it cannot open (sealed, and this
 * start has no key or another key) is counted in `unreadable` and left out: delivery refuses to start on it rather
 * than deliver to a partial book (DeliveryService.open).
 *
 * Its state snapshot (pipeline/state/, DELIVERY_BOOK_SCHEMA) keeps sealed what the records sealed: a target's url and
 * push keys go into the snapshot as the sealed text of the record they came from (kept beside the opened value), and
 * a load opens them again (a snapshot read under another key counts them unreadable, as the rebuild would). Rows are
 * the state's sets in a fixed order (targets by creation time then id, the rest by id), records in canonical JSON key
 * order, so a snapshot + tail and a rebuild give equal rows.
 */
import { isSealed, isSealedText, type AtRestCipher } from '../../common/AtRestCipher.ts'
import { canonicalJson } from '../../common/jcs.ts'
import type { AskRow, AttemptRow, ContactRow, RegistrationRow } from '../../pipeline/records/deliveryRecord.ts'
import type { StoredSecret } from './HookSigner.ts'
import type { AlertKind, SubjectKind, TargetCounts } from './schemas.ts'
import { contactAad, keysAad, urlAad } from './sealing.ts'

export const ENDPOINT_WINDOW_MS = 30 * 86_400_000

/** The snapshot rows' shape: bump when it or the meaning of a row changes (older snapshots are then rebuilt). */
export const DELIVERY_BOOK_SCHEMA = 1

const canonical = <T>(value: T): T => JSON.parse(canonicalJson(value)) as T
const byKey = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)
/** Sorted by creation time, then id: the order listings show after a restore. */
function byCreation<T>(values: Iterable<T>, at: (v: T) => string, id: (v: T) => string): T[] {
  return [...values].sort((a, b) => byKey(at(a), at(b)) || byKey(id(a), id(b)))
}
function need(ok: unknown, what: string): asserts ok {
  if (!ok) throw new Error(`delivery state row: ${what}`)
}
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

export interface HookState {
  hook_id: string
  payer: string | null
  decision_id: string
  url: string
  secret: StoredSecret
  armed_at: string
  payment_id: string | null
}

export interface EndpointState {
  endpoint_id: string
  payer: string
  url: string
  secret: StoredSecret
  registered_at: string
  expires_at: string
  paused_at: string | null
  clock_at: number
  payment_id: string | null
}

export interface DeviceState {
  device_id: string
  payer: string
  endpoint: string
  keys: { p256dh: string; auth: string }
  created_at: string
  updated_at: string
  disabled_at: string | null
  /**
   * Event time (the ledger's clock) since which the device has been active without a break: a notification goes only
   * to devices active at its event's time, so a restart that replays an old resolution does not push it to a device
   * re-activated after it (the live run could not have).
   */
  active_since: number
}

export interface FollowState {
  follow_id: string
  payer: string
  question_id: string
  subject_kind: SubjectKind
  subject: string
  channels: number
  created_at: string
  updated_at: string
  removed_at: string | null
  clock_at: number
}

export interface AlertState {
  alert_id: string
  payer: string
  kind: AlertKind
  question_id: string | null
  subject_kind: SubjectKind
  subject: string
  threshold: number | null
  cooldown_s: number
  created_at: string
  deleted_at: string | null
  clock_at: number
}

/** What the record says of one delivery so far. */
export interface DeliveryProgress {
  target_kind: AttemptRow['target_kind']
  target_id: string
  attempts: number
  final: boolean
  status: AttemptRow['status']
}

/** Wallet subjects are stored lower case (the routes lower them), assets as the canonical symbol. */
const subjectKey = (kind: SubjectKind, subject: string) => `${kind}|${subject}`

function push<K, V>(m: Map<K, V[]>, k: K, v: V): void {
  const a = m.get(k)
  if (a) a.push(v)
  else m.set(k, [v])
}

export class DeliveryBook {
  constructor(private readonly cipher: AtRestCipher | null = null) {}

  /** Sealed records this start could not open (no key, or another key), and the first one's target, for the log. */
  unreadable = 0
  firstUnreadable: string | null = null
  readonly hooks = new Map<string, HookState>()
  readonly hooksByDecision = new Map<string, HookState[]>()
  readonly endpoints = new Map<string, EndpointState>()
  readonly endpointsByPayer = new Map<string, EndpointState[]>()
  readonly devices = new Map<string, DeviceState>()
  readonly devicesByPayer = new Map<string, DeviceState[]>()
  readonly follows = new Map<string, FollowState>()
  readonly followsByPayer = new Map<string, FollowState[]>()
  readonly alerts = new Map<string, AlertState>()
  readonly alertsByPayer = new Map<string, AlertState[]>()
  /** Follows and alert watches by what they watch (subjectKey), so a decision or resolution looks only at its own. */
  readonly followsBySubject = new Map<string, FollowState[]>()
  readonly alertsBySubject = new Map<string, AlertState[]>()
  readonly asks = new Map<string, string>()
  /** The inverse of `asks`: the decisions each payer asked (first payer per decision, as `asks`). */
  readonly asksByPayer = new Map<string, string[]>()
  /** Recorded contacts by contact id (the first record of each). */
  readonly contacts = new Map<string, ContactRow>()
  readonly deliveries = new Map<string, DeliveryProgress>()
  /** Per target: deliveries recorded, delivered, and those whose latest attempt failed. */
  private readonly counts = new Map<string, TargetCounts>()
  /** Per alert: the event time (ms) of its last notification, for the cooldown. */
  readonly alertLastSent = new Map<string, number>()
  private readonly seenRegistrations = new Set<string>()
  private readonly seenAttempts = new Set<string>()
  /** `url|<target>` / `keys|<target>`: the sealed text a target's opened url or push keys came from (snapshots). */
  private readonly sealedText = new Map<string, string>()

  private keepSealed(field: 'url' | 'keys', targetId: string, raw: unknown): void {
    if (isSealedText(raw)) this.sealedText.set(`${field}|${targetId}`, raw as string)
    else this.sealedText.delete(`${field}|${targetId}`)
  }

  applyRegistration(row: RegistrationRow): void {
    if (this.seenRegistrations.has(row.id)) return
    this.seenRegistrations.add(row.id)
    const r = this.opened(row)
    if (!r) return
    const s = r.spec as Record<string, unknown>
    const clockAt = Date.parse(r.clock_at)
    switch (r.target_kind) {
      case 'hook': {
        if (this.hooks.has(r.target_id)) return
        const h: HookState = {
          hook_id: r.target_id, payer: r.payer, decision_id: String(s.decision_id), url: r.url!, secret: s.secret as StoredSecret,
          armed_at: r.recorded_at, payment_id: r.payment_id,
        }
        this.hooks.set(h.hook_id, h)
        push(this.hooksByDecision, h.decision_id, h)
        this.keepSealed('url', h.hook_id, row.url)
        return
      }
      case 'endpoint': {
        const have = this.endpoints.get(r.target_id)
        if (r.event === 'registered' && !have) {
          const e: EndpointState = {
            endpoint_id: r.target_id, payer: r.payer!, url: r.url!, secret: s.secret as StoredSecret, registered_at: r.recorded_at,
            expires_at: String(s.expires_at), paused_at: null, clock_at: clockAt, payment_id: r.payment_id,
          }
          this.endpoints.set(e.endpoint_id, e)
          push(this.endpointsByPayer, e.payer, e)
          this.keepSealed('url', e.endpoint_id, row.url)
        } else if (r.event === 'paused' && have && have.paused_at === null) {
          have.paused_at = r.recorded_at
        }
        return
      }
      case 'device': {
        const have = this.devices.get(r.target_id)
        if (r.event === 'registered') {
          const keys = s.keys as DeviceState['keys']
          this.keepSealed('keys', r.target_id, (row.spec as Record<string, unknown>).keys)
          if (have) {
            have.keys = keys
            have.updated_at = r.recorded_at
            if (have.disabled_at !== null) have.active_since = clockAt
            have.disabled_at = null
          } else {
            const d: DeviceState = {
              device_id: r.target_id, payer: r.payer!, endpoint: r.url!, keys, created_at: r.recorded_at, updated_at: r.recorded_at, disabled_at: null, active_since: clockAt,
            }
            this.devices.set(d.device_id, d)
            push(this.devicesByPayer, d.payer, d)
            this.keepSealed('url', d.device_id, row.url)
          }
        } else if (r.event === 'disabled' && have && have.disabled_at === null) {
          have.disabled_at = r.recorded_at
          have.updated_at = r.recorded_at
        }
        return
      }
      case 'follow': {
        const have = this.follows.get(r.target_id)
        if (r.event === 'set') {
          if (have) {
            have.channels = Number(s.channels)
            have.updated_at = r.recorded_at
            if (have.removed_at !== null) {
              have.removed_at = null
              have.clock_at = clockAt
            }
          } else {
            const f: FollowState = {
              follow_id: r.target_id, payer: r.payer!, question_id: String(s.question_id), subject_kind: s.subject_kind as SubjectKind,
              subject: String(s.subject), channels: Number(s.channels), created_at: r.recorded_at, updated_at: r.recorded_at, removed_at: null, clock_at: clockAt,
            }
            this.follows.set(f.follow_id, f)
            push(this.followsByPayer, f.payer, f)
            push(this.followsBySubject, subjectKey(f.subject_kind, f.subject), f)
          }
        } else if (r.event === 'removed' && have && have.removed_at === null) {
          have.removed_at = r.recorded_at
          have.updated_at = r.recorded_at
        }
        return
      }
      case 'alert': {
        const have = this.alerts.get(r.target_id)
        if (r.event === 'created') {
          if (have) {
            if (have.deleted_at !== null) {
              have.deleted_at = null
              have.created_at = r.recorded_at
              have.clock_at = clockAt
            }
          } else {
            const a: AlertState = {
              alert_id: r.target_id, payer: r.payer!, kind: s.kind as AlertKind, question_id: (s.question_id as string | null) ?? null,
              subject_kind: s.subject_kind as SubjectKind, subject: String(s.subject), threshold: (s.threshold as number | null) ?? null,
              cooldown_s: Number(s.cooldown_s), created_at: r.recorded_at, deleted_at: null, clock_at: clockAt,
            }
            this.alerts.set(a.alert_id, a)
            push(this.alertsByPayer, a.payer, a)
            push(this.alertsBySubject, subjectKey(a.subject_kind, a.subject), a)
          }
        } else if (r.event === 'deleted' && have && have.deleted_at === null) {
          have.deleted_at = r.recorded_at
        }
        return
      }
    }
  }

  /** The record with its sealed fields opened; null (counted unreadable) when this start cannot open them. */
  private opened(r: RegistrationRow): RegistrationRow | null {
    const spec = r.spec as Record<string, unknown>
    const sealedUrl = isSealedText(r.url)
    const sealedKeys = isSealedText(spec.keys)
    const sealedSecret = isSealed(spec.secret)
    if (!sealedUrl && !sealedKeys && !sealedSecret) return r
    try {
      if (!this.cipher) throw new Error('no key')
      // The secret stays sealed in memory (opened per attempt by the signer); opening it here proves the key is the one.
      if (sealedSecret) this.cipher.open(spec.secret as StoredSecret & { alg: 'A256GCM' }, r.target_id)
      return {
        ...r,
        url: sealedUrl ? this.cipher.openText(r.url!, urlAad(r.target_id)) : r.url,
        spec: sealedKeys ? { ...spec, keys: JSON.parse(this.cipher.openText(spec.keys as string, keysAad(r.target_id))) } : spec,
      }
    } catch {
      this.unreadable++
      this.firstUnreadable ??= r.target_id
      return null
    }
  }

  applyContact(r: ContactRow): void {
    if (this.contacts.has(r.contact_id)) return
    if (isSealedText(r.contact)) {
      try {
        if (!this.cipher) throw new Error('no key')
        this.cipher.openText(r.contact, contactAad(r.contact_id))
      } catch {
        this.unreadable++
        this.firstUnreadable ??= r.contact_id
        return
      }
    }
    this.contacts.set(r.contact_id, r)
  }

  applyAsk(r: AskRow): void {
    this.addAsk(r.decision_id, r.payer)
  }

  private addAsk(decisionId: string, payer: string): void {
    if (this.asks.has(decisionId)) return
    this.asks.set(decisionId, payer)
    const mine = this.asksByPayer.get(payer)
    if (mine) mine.push(decisionId)
    else this.asksByPayer.set(payer, [decisionId])
  }

  applyAttempt(r: AttemptRow): void {
    if (this.seenAttempts.has(r.id)) return
    this.seenAttempts.add(r.id)
    const have = this.deliveries.get(r.delivery_id)
    const c = this.counts.get(r.target_id) ?? { registered: 0, delivered: 0, failing: 0 }
    this.counts.set(r.target_id, c)
    if (!have) c.registered++
    else if (have.status === 'failed') c.failing--
    if (r.status === 'delivered') c.delivered++
    else c.failing++
    if (!have || r.attempt >= have.attempts) {
      this.deliveries.set(r.delivery_id, { target_kind: r.target_kind, target_id: r.target_id, attempts: r.attempt, final: r.final, status: r.status })
    }
    if (r.target_kind === 'alert' && r.attempt === 1) {
      const at = Date.parse(r.event_at)
      if (at > (this.alertLastSent.get(r.target_id) ?? -Infinity)) this.alertLastSent.set(r.target_id, at)
    }
  }

  /** The state as snapshot rows (header): one row per target, ask, contact, delivery, count, cooldown and seen id. */
  *rows(): Iterable<unknown> {
    const sealed = (field: 'url' | 'keys', id: string) => this.sealedText.get(`${field}|${id}`)
    yield ['unreadable', this.unreadable, this.firstUnreadable]
    for (const h of byCreation(this.hooks.values(), (h) => h.armed_at, (h) => h.hook_id)) yield ['hook', canonical({ ...h, url: sealed('url', h.hook_id) ?? h.url })]
    for (const e of byCreation(this.endpoints.values(), (e) => e.registered_at, (e) => e.endpoint_id)) {
      yield ['endpoint', canonical({ ...e, url: sealed('url', e.endpoint_id) ?? e.url })]
    }
    for (const d of byCreation(this.devices.values(), (d) => d.created_at, (d) => d.device_id)) {
      yield ['device', canonical({ ...d, endpoint: sealed('url', d.device_id) ?? d.endpoint, keys: sealed('keys', d.device_id) ?? d.keys })]
    }
    for (const f of byCreation(this.follows.values(), (f) => f.created_at, (f) => f.follow_id)) yield ['follow', canonical(f)]
    // An alert's created_at moves when it is re-created: ordered by id only, so the order never depends on history.
    for (const a of byCreation(this.alerts.values(), () => '', (a) => a.alert_id)) yield ['alert', canonical(a)]
    for (const id of [...this.asks.keys()].sort()) yield ['ask', id, this.asks.get(id)]
    for (const id of [...this.contacts.keys()].sort()) yield ['contact', canonical(this.contacts.get(id)!)]
    for (const id of [...this.deliveries.keys()].sort()) yield ['delivery', id, canonical(this.deliveries.get(id)!)]
    for (const id of [...this.counts.keys()].sort()) yield ['count', id, canonical(this.counts.get(id)!)]
    for (const id of [...this.alertLastSent.keys()].sort()) yield ['alert_sent', id, this.alertLastSent.get(id)]
    for (const id of [...this.seenRegistrations].sort()) yield ['seen_registration', id]
    for (const id of [...this.seenAttempts].sort()) yield ['seen_attempt', id]
  }

  /**
   * Fills this (empty) book from snapshot rows, all or nothing: every row is checked and every sealed field opened
   * before the first is applied (a field this start cannot open counts unreadable and leaves its target out, as the
   * rebuild does).
   */
  load(rows: readonly unknown[]): void {
    need(this.hooks.size + this.endpoints.size + this.devices.size + this.seenRegistrations.size + this.seenAttempts.size === 0, 'the book is not empty')
    const apply: Array<() => void> = []
    let unreadable = 0
    let firstUnreadable: string | null = null
    const open = (field: 'url' | 'keys', id: string, value: unknown): { plain: unknown; sealed: string | null } | null => {
      if (!isSealedText(value)) return { plain: value, sealed: null }
      try {
        if (!this.cipher) throw new Error('no key')
        const text = this.cipher.openText(value as string, field === 'url' ? urlAad(id) : keysAad(id))
        return { plain: field === 'url' ? text : JSON.parse(text), sealed: value as string }
      } catch {
        unreadable++
        firstUnreadable ??= id
        return null
      }
    }
    const keep = (field: 'url' | 'keys', id: string, sealed: string | null) => apply.push(() => sealed !== null && this.sealedText.set(`${field}|${id}`, sealed))
    /** A follow or an alert watch, indexed by payer and by what it watches. */
    const addWatch = <W extends { payer: string; subject_kind: SubjectKind; subject: string }>(
      id: string, w: W, all: Map<string, W>, byPayer: Map<string, W[]>, bySubject: Map<string, W[]>,
    ) =>
      apply.push(() => {
        all.set(id, w)
        push(byPayer, w.payer, w)
        push(bySubject, subjectKey(w.subject_kind, w.subject), w)
      })
    /** A hook or endpoint row: its url opened (or the target left out as unreadable), then added. */
    const withUrl = <T>(id: string, row: Record<string, unknown>, add: (target: T) => void) => {
      const url = open('url', id, row.url)
      if (!url) return
      const target = { ...row, url: url.plain } as T
      keep('url', id, url.sealed)
      apply.push(() => add(target))
    }
    for (const row of rows) {
      need(Array.isArray(row) && typeof row[0] === 'string', 'not a [kind, ...] row')
      const [kind, a, b] = row as [string, unknown, unknown]
      switch (kind) {
        case 'unreadable':
          need(Number.isSafeInteger(a) && (b === null || typeof b === 'string'), 'unreadable count')
          unreadable += a as number
          firstUnreadable = (b as string | null) ?? firstUnreadable
          break
        case 'hook':
          need(isObject(a) && typeof a.hook_id === 'string' && typeof a.decision_id === 'string' && typeof a.url === 'string' && isObject(a.secret), 'hook')
          withUrl(a.hook_id, a, (h: HookState) => {
            this.hooks.set(h.hook_id, h)
            push(this.hooksByDecision, h.decision_id, h)
          })
          break
        case 'endpoint':
          need(isObject(a) && typeof a.endpoint_id === 'string' && typeof a.payer === 'string' && typeof a.url === 'string' && typeof a.clock_at === 'number', 'endpoint')
          withUrl(a.endpoint_id, a, (e: EndpointState) => {
            this.endpoints.set(e.endpoint_id, e)
            push(this.endpointsByPayer, e.payer, e)
          })
          break
        case 'device': {
          need(isObject(a) && typeof a.device_id === 'string' && typeof a.payer === 'string' && typeof a.endpoint === 'string' && typeof a.active_since === 'number', 'device')
          const url = open('url', a.device_id, a.endpoint)
          const keys = url && open('keys', a.device_id, a.keys)
          if (!url || !keys) break
          need(isObject(keys.plain) && typeof keys.plain.p256dh === 'string' && typeof keys.plain.auth === 'string', 'device keys')
          const d = { ...a, endpoint: url.plain, keys: keys.plain } as unknown as DeviceState
          keep('url', d.device_id, url.sealed)
          keep('keys', d.device_id, keys.sealed)
          apply.push(() => {
            this.devices.set(d.device_id, d)
            push(this.devicesByPayer, d.payer, d)
          })
          break
        }
        case 'follow':
          need(isObject(a) && typeof a.follow_id === 'string' && typeof a.payer === 'string' && typeof a.subject === 'string' && typeof a.channels === 'number', 'follow')
          addWatch(a.follow_id, a as unknown as FollowState, this.follows, this.followsByPayer, this.followsBySubject)
          break
        case 'alert':
          need(isObject(a) && typeof a.alert_id === 'string' && typeof a.payer === 'string' && typeof a.subject === 'string' && typeof a.cooldown_s === 'number', 'alert')
          addWatch(a.alert_id, a as unknown as AlertState, this.alerts, this.alertsByPayer, this.alertsBySubject)
          break
        case 'ask':
          need(typeof a === 'string' && typeof b === 'string', 'ask')
          apply.push(() => this.addAsk(a, b))
          break
        case 'contact':
          need(isObject(a) && typeof a.contact_id === 'string' && typeof a.contact === 'string', 'contact')
          if (isSealedText(a.contact)) {
            try {
              if (!this.cipher) throw new Error('no key')
              this.cipher.openText(a.contact, contactAad(a.contact_id))
            } catch {
              unreadable++
              firstUnreadable ??= a.contact_id
              break
            }
          }
          apply.push(() => this.contacts.set(a.contact_id as string, a as unknown as ContactRow))
          break
        case 'delivery':
          need(typeof a === 'string' && isObject(b) && typeof b.target_id === 'string' && typeof b.attempts === 'number', 'delivery')
          apply.push(() => this.deliveries.set(a, b as unknown as DeliveryProgress))
          break
        case 'count':
          need(typeof a === 'string' && isObject(b) && typeof b.registered === 'number' && typeof b.delivered === 'number' && typeof b.failing === 'number', 'count')
          apply.push(() => this.counts.set(a, b as unknown as TargetCounts))
          break
        case 'alert_sent':
          need(typeof a === 'string' && typeof b === 'number', 'alert cooldown')
          apply.push(() => this.alertLastSent.set(a, b))
          break
        case 'seen_registration':
          need(typeof a === 'string', 'registration id')
          apply.push(() => this.seenRegistrations.add(a))
          break
        case 'seen_attempt':
          need(typeof a === 'string', 'attempt id')
          apply.push(() => this.seenAttempts.add(a))
          break
        default:
          throw new Error(`delivery state row: unexpected kind ${JSON.stringify(kind)}`)
      }
    }
    for (const fn of apply) fn()
    this.unreadable = unreadable
    this.firstUnreadable = firstUnreadable
  }

  /** The follows or watches on a decision's asset, and on its subject wallet (account-scoped questions). */
  watchersOf<W>(index: Map<string, W[]>, d: { asset: string; subject: string | null }): W[] {
    const byAsset = index.get(subjectKey('asset', d.asset)) ?? []
    const byWallet = d.subject ? (index.get(subjectKey('wallet', d.subject.toLowerCase())) ?? []) : []
    return byWallet.length === 0 ? byAsset : [...byAsset, ...byWallet]
  }

  countsOf(targetId: string): TargetCounts {
    return { ...(this.counts.get(targetId) ?? { registered: 0, delivered: 0, failing: 0 }) }
  }
}
