/**
 * The delivery book checkpointed (issue 31) on both logs, with a deployment key: snapshot at random cuts + tail ==
 * full rebuild (follows, alert watches and contacts written by delivery itself; sealed hooks, endpoints and push
 * devices, asks and delivery attempts by another writer), bad snapshots fall back to the rebuild; the snapshot keeps
 * URLs, push keys and contacts sealed; a start under another key refuses as before (DELIVERY_KEY_MISSING).
 */
import t from 'tap'
import { randomUUID } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { AtRestCipher } from '../../../common/AtRestCipher.ts'
import type { Clock } from '../../../common/Clock.ts'
import { Journal } from '../../../pipeline/journal/Journal.ts'
import type { EventLog } from '../../../pipeline/log/EventLog.ts'
import {
  DELIVERY_ASKS, DELIVERY_ATTEMPTS, DELIVERY_REGISTRATIONS, deliveryId, type AttemptRow, type RegistrationRow,
} from '../../../pipeline/records/deliveryRecord.ts'
import { stateDigest, type CheckpointSettings } from '../../../pipeline/state/StateStore.ts'
import { DeliveryService } from '../../../product/delivery/DeliveryService.ts'
import { HookSigner } from '../../../product/delivery/HookSigner.ts'
import { PinnedHttpClient } from '../../../product/delivery/PinnedHttpClient.ts'
import { sealRegistration } from '../../../product/delivery/sealing.ts'
import { UrlGuard } from '../../../product/delivery/UrlGuard.ts'
import { checkCheckpointEquivalence, seeded } from '../../helpers/checkpoint.ts'
import { TestLedger } from '../../helpers/delivery/ledgerBus.ts'
import { forEachLog } from '../../helpers/logs.ts'
import { makeTempDir } from '../../helpers/tmp.ts'

const KEY = 'b'.repeat(64)
const T0 = Date.parse('2026-03-02T10:00:00.000Z')
const PAYERS = Array.from({ length: 4 }, (_, i) => `0x${String(i + 1).repeat(40)}`)
const ASSETS = ['BTC', 'ETH', 'SOL']

type Own = { follow: { payer: string; asset: string; channels: number } } | { unfollow: { payer: string; asset: string } } | { alert: { payer: string; asset: string } } | { contact: string }
type Other = { registration: RegistrationRow } | { attempt: AttemptRow } | { ask: { decision_id: string; payer: string } }
type Item = Own | Other

const iso = (ms: number) => new Date(ms).toISOString()

function registration(i: number, kind: 'hook' | 'endpoint' | 'device', payer: string, cipher: AtRestCipher): RegistrationRow {
  const target = `${kind.slice(0, 3)}_${i.toString(16).padStart(8, '0')}`
  const spec =
    kind === 'hook' ? { decision_id: `dec-${i % 7}`, secret: { alg: 'derived' } }
    : kind === 'endpoint' ? { expires_at: iso(T0 + 30 * 86_400_000), secret: { alg: 'derived' } }
    : { keys: { p256dh: `p256-${i}`, auth: `auth-${i}` } }
  const url = kind === 'device' ? `https://push.example.test/${i}` : `https://hooks.example.test/${i}?token=t${i}`
  return sealRegistration(
    { v: 1, id: `reg_${randomUUID()}`, target_kind: kind, target_id: target, payer, event: kind === 'hook' ? 'armed' : 'registered', url, spec, payment_id: `pay_${i}`, recorded_at: iso(T0 + i * 1000), clock_at: iso(T0 + i * 1000) },
    cipher,
  )
}

function history(n: number, seed: number): Item[] {
  const rnd = seeded(seed)
  const cipher = AtRestCipher.fromKey(KEY)!
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!
  const items: Item[] = []
  for (let i = 0; items.length < n; i++) {
    const payer = pick(PAYERS)
    const r = rnd()
    if (r < 0.2) items.push({ follow: { payer, asset: pick(ASSETS), channels: 1 + Math.floor(rnd() * 3) } })
    else if (r < 0.3) items.push({ unfollow: { payer, asset: pick(ASSETS) } })
    else if (r < 0.4) items.push({ alert: { payer, asset: pick(ASSETS) } })
    else if (r < 0.5) items.push({ contact: `user${Math.floor(rnd() * 30)}@example.com` })
    else if (r < 0.65) items.push({ registration: registration(i, pick(['hook', 'endpoint', 'device'] as const), payer, cipher) })
    // One payer per decision: asks are keyed by payer, so two payers' asks of one decision race across partitions.
    else if (r < 0.75) items.push({ ask: { decision_id: `dec-${i}`, payer } })
    else {
      const delivery = deliveryId('test', String(Math.floor(rnd() * 25)))
      const attempt = 1 + Math.floor(rnd() * 2)
      const status = rnd() < 0.7 ? 'delivered' : 'failed'
      items.push({
        attempt: {
          v: 1, id: `${delivery}#${attempt}`, delivery_id: delivery, attempt, target_kind: 'alert', target_id: `al_${delivery.slice(4, 10)}`, payer, channel: 'http',
          decision_id: null, status, final: status === 'delivered' || attempt === 2, http_status: status === 'delivered' ? 200 : 500, latency_ms: 5,
          error_class: status === 'delivered' ? null : 'http_status', event_at: iso(T0 + i * 60_000), attempted_at: iso(T0 + i * 60_000),
        },
      })
    }
  }
  return items
}

/** Another writer of delivery's journals: the records as stored (sealed), appended directly. */
async function otherWriter(log: EventLog) {
  const registrations = await Journal.open({ log, def: DELIVERY_REGISTRATIONS })
  const attempts = await Journal.open({ log, def: DELIVERY_ATTEMPTS })
  const asks = await Journal.open({ log, def: DELIVERY_ASKS })
  return {
    async write(items: Other[]) {
      await registrations.append(items.flatMap((x) => ('registration' in x ? [x.registration] : [])))
      await attempts.append(items.flatMap((x) => ('attempt' in x ? [x.attempt] : [])))
      await asks.append(items.flatMap((x) => ('ask' in x ? [{ ...x.ask, payment_id: `pay_${x.ask.payer}`, recorded_at: iso(T0) }] : [])))
    },
    async close() {
      for (const j of [registrations, attempts, asks]) await j.close()
    },
  }
}

async function writeOwn(delivery: DeliveryService, x: Own): Promise<void> {
  if ('follow' in x) await delivery.setFollow(x.follow.payer, { question_id: 'S05_volatility_expansion', subject_kind: 'asset', subject: x.follow.asset, channels: x.follow.channels })
  else if ('unfollow' in x) {
    const id = delivery.followId(x.unfollow.payer, { question_id: 'S05_volatility_expansion', subject_kind: 'asset', subject: x.unfollow.asset })
    await delivery.removeFollow(x.unfollow.payer, id).catch(() => undefined) // an unknown follow: 404, nothing written
  } else if ('alert' in x) {
    await delivery.createAlert(x.alert.payer, { kind: 'probability', question_id: 'S05_volatility_expansion', subject_kind: 'asset', subject: x.alert.asset, threshold: 0.5, cooldown_s: 60 })
  } else await delivery.recordContact({ contact: x.contact, consent: true, source: null, seat: null })
}

t.test('delivery book: snapshot at random cuts + tail == full rebuild; sealed at rest; bad snapshots fall back', (t) =>
  forEachLog(t, async (t, makeLog, kind) => {
    const log = await makeLog()
    const dir = await makeTempDir(t)
    const clock: Clock = { now: () => T0 }
    const items = history(kind === 'kafka' ? 80 : 300, 5)
    const other = await otherWriter(log)
    t.teardown(() => other.close())
    const open = async (checkpoints: CheckpointSettings | null, key: string | null = KEY, groupId = 'svc.delivery') =>
      DeliveryService.open({
        log, ledger: new TestLedger(T0), clock, checkpoints, push: null, groupId,
        guard: UrlGuard.create({ allow: ['127.0.0.1/32'] }),
        http: PinnedHttpClient.create({ timeoutMs: 2000 }),
        signer: await HookSigner.open({ dir: join(dir, 'signer'), key }),
      })
    const snapshots = await checkCheckpointEquivalence(t, {
      store: 'svc.delivery',
      total: items.length,
      open: async (checkpoints) => {
        const delivery = await open(checkpoints)
        return { delivery, digest: () => stateDigest(delivery.book), restored: delivery.restored, close: () => delivery.close() }
      },
      write: async (from, to, through) => {
        const slice = items.slice(from, to)
        if (!through) {
          // Down: the own kinds are written by another delivery process (no snapshots), the rest as records.
          const writer = await open(null, KEY, 'svc.delivery-other')
          for (const x of slice) if (!('registration' in x || 'attempt' in x || 'ask' in x)) await writeOwn(writer, x)
          await writer.close()
        } else for (const x of slice) if (!('registration' in x || 'attempt' in x || 'ask' in x)) await writeOwn(through.delivery, x)
        await other.write(slice.filter((x): x is Other => 'registration' in x || 'attempt' in x || 'ask' in x))
      },
    })
    const snapshot = await readFile(snapshots.pathOf('svc.delivery'), 'utf8')
    t.notMatch(snapshot, /hooks\.example\.test|push\.example\.test|p256-|@example\.com/, 'no URL, push key or contact in the clear in the snapshot')
    t.match(snapshot, /sealed:A256GCM/, 'they are there sealed')
    await t.rejects(open({ snapshots, everyMs: 0 }, 'c'.repeat(64)), { code: 'DELIVERY_KEY_MISSING' }, 'another key: the restored book refuses to start, as the rebuild does')
  }),
)
