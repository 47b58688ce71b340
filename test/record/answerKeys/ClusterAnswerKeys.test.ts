/**
 * Answer keys across a cluster (issue 32; record/answerKeys/ClusterAnswerKeys.ts): two instances, each with the
 * keyring of its own data folder, publish their windows on the log; each then publishes both (the same list), a
 * record signed by either verifies against either's list, a rotation made while an instance was down is published as
 * a retirement at its next start, and a start that finds its windows published appends nothing.
 */
import t from 'tap'
import { join } from 'node:path'
import pino from 'pino'
import { EmbeddedLog } from '../../../pipeline/log/EmbeddedLog.ts'
import { ANSWER_KEYS } from '../../../pipeline/records/answerKeyRecord.ts'
import { openAnswerKeyring, rotateAnswerKey } from '../../../record/answerKeys/answerKeyFile.ts'
import { checkAnswerSignature } from '../../../record/answerKeys/answerSignature.ts'
import { ClusterAnswerKeys } from '../../../record/answerKeys/ClusterAnswerKeys.ts'
import { makeTempDir } from '../../helpers/tmp.ts'
import { until } from '../../helpers/until.ts'

const logger = pino({ level: 'silent' })
const T0 = Date.parse('2026-11-01T00:00:00.000Z')

t.test('two instances publish each other\'s answer keys; a receipt of either verifies at both', async (t) => {
  const log = await EmbeddedLog.open(join(await makeTempDir(t, 'svc-cluster-keys-'), 'log'))
  t.teardown(() => log.close())
  const folders = { a: await makeTempDir(t, 'svc-keys-a-'), b: await makeTempDir(t, 'svc-keys-b-') }
  let now = T0
  const ringA = await openAnswerKeyring({ dataDir: folders.a, now: () => now })
  now += 60_000
  const ringB = await openAnswerKeyring({ dataDir: folders.b, now: () => now })
  t.not(ringA.signer, ringB.signer, 'each folder made its own key')

  const open = (name: 'a' | 'b', own: typeof ringA.ownKeys) => ClusterAnswerKeys.open({ log, instance: name, own, now: () => now, logger, group: `keys-${name}` })
  const a = await open('a', ringA.ownKeys)
  t.teardown(() => a.close())
  ringA.useCluster(a)
  t.same(ringA.keys, ringA.ownKeys, 'alone: its own window')
  const b = await open('b', ringB.ownKeys)
  t.teardown(() => b.close())
  ringB.useCluster(b)
  t.same(ringB.keys.map((k) => k.address), [ringA.signer, ringB.signer], 'b starts with a\'s window and its own, oldest first')
  await until('a reads b\'s window', () => ringA.keys.length === 2, 5_000)
  t.same(ringA.keys, ringB.keys, 'both publish the same list')

  const record = Object.freeze({ decision_id: 'd-1', probability: 0.61 })
  const signed = await ringB.sign(record)
  const atA = await checkAnswerSignature({ ...record }, signed, ringA.keys)
  t.same([atA.ok, atA.reason], [true, 'ok'], 'a record signed at b verifies against a\'s list')
  const own = await checkAnswerSignature({ ...record }, signed, ringA.ownKeys)
  t.same([own.ok, own.reason], [false, 'unknown_signer'], 'which a\'s own folder alone would refuse')

  // b stops, its key is rotated offline, and b starts again: the old window is retired, the new one published.
  await b.close()
  now += 3_600_000
  const rotated = await rotateAnswerKey({ dataDir: folders.b, now: () => now })
  const ringB2 = await openAnswerKeyring({ dataDir: folders.b, now: () => now })
  const b2 = await open('b', ringB2.ownKeys)
  t.teardown(() => b2.close())
  ringB2.useCluster(b2)
  const retired = new Date(now).toISOString()
  await until('a reads the rotation', () => ringA.keys.length === 3, 5_000)
  t.same(ringA.keys.map((k) => [k.address, k.valid_until]), [[ringA.signer, null], [ringB.signer, retired], [rotated.active.address, null]], 'a publishes b\'s old window retired at the rotation and its new one open')
  t.same(ringB2.keys, ringA.keys, 'and so does b')
  t.same((await checkAnswerSignature({ ...record }, signed, ringA.keys)).reason, 'ok', 'the receipt signed before the rotation still verifies')

  // A start that finds its windows on the log as they are appends nothing.
  const before = (await log.endOffsets(ANSWER_KEYS.name)).reduce((n, x) => n + x, 0)
  await a.close()
  const again = await open('a', ringA.ownKeys)
  t.teardown(() => again.close())
  t.equal((await log.endOffsets(ANSWER_KEYS.name)).reduce((n, x) => n + x, 0), before, `no record appended by a restart with nothing new (${before} records)`)
  t.same(again.keys, ringA.keys, 'and it reads the same list')
})
