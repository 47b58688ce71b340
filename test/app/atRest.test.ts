/**
 * Data at rest (issue 29, point 4), over the real service and its real data folder: with SVC_DELIVERY_KEY set, a hook
 * endpoint whose URL carries a capability token, a push device and a contact are registered over HTTP; after the
 * service stops, no file in the data folder holds the token, the push endpoint or keys, or the e-mail address (read
 * raw, and the Parquet files also decoded through DuckDB since they are compressed), every file is 0600 and every
 * folder 0700. A start without the key refuses delivery loudly (503 on its routes, /readyz delivery down) and a start
 * with it again reads everything back.
 */
import t from 'tap'
import type { Test } from 'tap'
import { createECDH, randomBytes } from 'node:crypto'
import { readdir, readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { DuckDBInstance } from '@duckdb/node-api'
import { ServiceApp } from '../../app/ServiceApp.ts'
import { loadConfig } from '../../app/config.ts'
import { makeTempDir } from '../helpers/tmp.ts'
import { signIn } from '../helpers/serving/signIn.ts'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'

/** A real key: the payer proves itself over HTTP (sign-in-with-x, then its bearer session) as any caller must. */
const ACCOUNT = privateKeyToAccount(generatePrivateKey())
const PAYER = ACCOUNT.address.toLowerCase()
const OPS = 'ops-token-for-the-at-rest-test'
const KEY = randomBytes(32).toString('hex')
const TOKEN = `cap${randomBytes(12).toString('hex')}`
const HOOK_URL = `https://127.0.0.1:9/hooks/in?token=${TOKEN}`
const PUSH_TOKEN = `push${randomBytes(12).toString('hex')}`
const PUSH_ENDPOINT = `https://127.0.0.1:9/push/${PUSH_TOKEN}`
const ecdh = createECDH('prime256v1')
const P256DH = ecdh.generateKeys().toString('base64url')
const AUTH = randomBytes(16).toString('base64url')
const EMAIL = `alice.${randomBytes(6).toString('hex')}@example.org`
const SECRETS = { 'hook URL token': TOKEN, 'push endpoint': PUSH_TOKEN, 'push p256dh': P256DH, 'push auth': AUTH, 'contact e-mail': EMAIL }

async function startApp(dataDir: string, key: string | null) {
  const config = loadConfig({
    PORT: '0', SVC_RECORD_INTERVAL_S: '0', SVC_OPS_TOKEN: OPS, LOG_LEVEL: 'fatal', SVC_DATA_DIR: dataDir, SVC_SIM_HISTORY_DAYS: '2', SVC_TRAIN_DAYS: '1',
    SVC_DELIVERY_ALLOW: '127.0.0.1/32', SVC_CONTACTS: 'record', ...(key ? { SVC_DELIVERY_KEY: key } : {}),
  })
  const app = await ServiceApp.start(config, () => undefined)
  const abort = new AbortController()
  const running = app.run(abort.signal)
  let proof: Record<string, string> = { 'x-svc-payer': PAYER }
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(app.server.url + path, {
      method, headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...proof, ...headers }, ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    return { status: res.status, body: (await res.json()) as any }
  }
  // The sink starts after the warm-up (a short simulated history: seconds): wait for it, so the journals reach Parquet.
  const deadline = Date.now() + 120_000
  while ((await fetch(app.server.url + '/readyz')).status !== 200) {
    if (Date.now() > deadline) throw new Error('/readyz did not answer 200 in time')
    await sleep(200)
  }
  proof = (await signIn(app.server.url, ACCOUNT)).headers
  return {
    call,
    stop: async () => {
      abort.abort()
      await app.server.close()
      await running
      await app.close()
    },
  }
}

async function walk(dir: string, out: { files: string[]; dirs: string[] } = { files: [], dirs: [dir] }) {
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name)
    if (e.isDirectory()) {
      out.dirs.push(p)
      await walk(p, out)
    } else out.files.push(p)
  }
  return out
}

/** Every row of every Parquet file as JSON text (Parquet pages are compressed: raw bytes would hide plain values). */
async function parquetText(files: string[]): Promise<string> {
  const db = await DuckDBInstance.create(':memory:')
  const conn = await db.connect()
  let text = ''
  try {
    for (const f of files.filter((f) => f.endsWith('.parquet'))) {
      const reader = await conn.runAndReadAll(`SELECT * FROM read_parquet('${f.replaceAll("'", "''")}')`)
      text += JSON.stringify(reader.getRowObjectsJson()) + '\n'
    }
  } finally {
    conn.closeSync()
    db.closeSync()
  }
  return text
}

async function checkFolder(t: Test, dataDir: string, when: string, endpointId: string) {
  const { files, dirs } = await walk(dataDir)
  for (const d of dirs) t.equal((await stat(d)).mode & 0o777, 0o700, `${when}: folder ${d.slice(dataDir.length) || '/'} is 0700`)
  const wide = []
  for (const f of files) if (((await stat(f)).mode & 0o777) !== 0o600) wide.push(`${f.slice(dataDir.length)} ${((await stat(f)).mode & 0o777).toString(8)}`)
  t.same(wide, [], `${when}: every one of ${files.length} files is 0600`)
  const raw = Buffer.concat(await Promise.all(files.map((f) => readFile(f))))
  const decoded = await parquetText(files)
  t.ok(decoded.includes(endpointId), `${when}: the registrations reached Parquet`)
  for (const [what, value] of Object.entries(SECRETS)) {
    t.equal(raw.indexOf(value), -1, `${when}: the ${what} is in no file's bytes`)
    t.notOk(decoded.includes(value), `${when}: the ${what} is in no Parquet row`)
  }
  t.match(decoded, /sealed:A256GCM:/, `${when}: the Parquet rows hold the sealed values`)
  t.match(decoded, /127\.0\.0\.1:9/, `${when}: the host stays plain beside a sealed URL`)
}

t.test('with a key: URLs, push keys and contacts sealed, files 0600 in 0700 folders; without it delivery refuses; with it again all reads back', async (t) => {
  const dataDir = join(await makeTempDir(t, 'svc-at-rest-'), 'data')

  let run = await startApp(dataDir, KEY)
  let stopped = false
  t.teardown(() => (stopped ? undefined : run.stop()))
  t.equal((await run.call('POST', '/v1/billing/grants', { action: 'grant', payer: PAYER, credits: 100_000, ref: 'at-rest-test' }, { 'x-svc-ops': OPS })).status, 200)
  const endpoint = await run.call('POST', '/v1/hook-endpoints', { url: HOOK_URL })
  t.equal(endpoint.status, 201, JSON.stringify(endpoint.body.error ?? ''))
  t.equal(endpoint.body.data.secret_storage, 'encrypted (AES-256-GCM)')
  const device = await run.call('POST', '/v1/push/endpoints', { subscription: { endpoint: PUSH_ENDPOINT, keys: { p256dh: P256DH, auth: AUTH } } })
  t.equal(device.status, 201, JSON.stringify(device.body.error ?? ''))
  const contact = await run.call('POST', '/v1/contacts', { contact: EMAIL, consent: true })
  t.equal(contact.status, 201, JSON.stringify(contact.body.error ?? ''))
  // The sink's consumer polls continuously; a moment lets it take the delivery records before the stop seals them.
  await sleep(1500)
  await run.stop()
  stopped = true
  await checkFolder(t, dataDir, 'after a run with the key', endpoint.body.data.endpoint_id)

  // Without the key: the service starts, delivery does not (its records cannot be read), and says so.
  run = await startApp(dataDir, null)
  stopped = false
  const refused = await run.call('GET', '/v1/hook-endpoints')
  t.equal(refused.status, 503)
  t.match(refused.body.error, { detail: { reason: 'SERVICE_UNWIRED', missing: 'delivery' } }, 'delivery routes refuse without the key')
  const ready = await run.call('GET', '/readyz')
  t.equal(ready.status, 200, 'the rest of the service is ready (delivery is not critical)')
  const providers = ready.body.data.providers as Array<{ slug: string; status: string; error_class: string | null }>
  t.match(providers.find((p) => p.slug === 'delivery'), { status: 'down', error_class: 'DELIVERY_KEY_MISSING' }, '/readyz shows the delivery stage down')
  await run.stop()
  stopped = true

  // With a different key: the same refusal (GCM authenticates the key).
  run = await startApp(dataDir, randomBytes(32).toString('hex'))
  stopped = false
  t.equal((await run.call('GET', '/v1/hook-endpoints')).status, 503, 'another key is refused like no key')
  await run.stop()
  stopped = true

  // With the key again: restart and replay read everything back.
  run = await startApp(dataDir, KEY)
  stopped = false
  const endpoints = await run.call('GET', '/v1/hook-endpoints')
  t.equal(endpoints.status, 200)
  t.equal(endpoints.body.data.items[0]?.url, HOOK_URL, 'the endpoint URL reads back whole after restart')
  t.equal((await run.call('POST', '/v1/hook-endpoints', { url: HOOK_URL })).status, 200, 're-registering the same URL replays it (dedupe on the opened URL)')
  const devices = await run.call('GET', '/v1/push/endpoints')
  t.match(devices.body.data.items, [{ device_id: device.body.data.device_id, host: '127.0.0.1:9', active: true }])
  const again = await run.call('POST', '/v1/contacts', { contact: EMAIL.toUpperCase(), consent: true })
  t.equal(again.status, 200, 'the same contact is already recorded (keyed id)')
  t.equal(again.body.data.contact_id, contact.body.data.contact_id)
  await run.stop()
  stopped = true
  await checkFolder(t, dataDir, 'after the restarts', endpoint.body.data.endpoint_id)
})
