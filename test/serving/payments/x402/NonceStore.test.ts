/**
 * NonceStore: x402-v2.md §8.8 "keep a durable set keyed by (lowercase(from), lowercase(nonce)); reject repeats.
 * Insert atomically before doing paid work. Entries may be dropped once validBefore + skew has passed."
 */
import t from 'tap'
import { appendFile, readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { NONCE_FILE, NonceStore } from '../../../../serving/payments/x402/NonceStore.ts'
import { makeTempDir } from '../../../helpers/tmp.ts'

const FROM = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266'
const nonce = (i: number) => '0x' + i.toString(16).padStart(64, '0')
const NOW = 1_800_000_000_000
const VB = BigInt(NOW / 1000 + 60)

t.test('first use wins, repeats lose, keys are case-insensitive', async (t) => {
  const dir = await makeTempDir(t)
  const s = await NonceStore.open({ dir, now: () => NOW })
  t.teardown(() => s.close())
  t.equal(await s.insert(FROM, nonce(1), VB), true)
  t.equal(await s.insert(FROM, nonce(1), VB), false)
  t.equal(await s.insert(FROM.toLowerCase(), nonce(1).toUpperCase().replace('0X', '0x'), VB), false, 'same key in other case')
  t.equal(await s.insert('0x209693Bc6afc0C5328bA36FaF03C514EF312287C', nonce(1), VB), true, 'same nonce, other payer')
  t.equal(s.size, 2)
})

t.test('concurrent inserts of one nonce: exactly one wins; concurrent distinct nonces are all acknowledged and on disk', async (t) => {
  const dir = await makeTempDir(t)
  const s = await NonceStore.open({ dir, now: () => NOW })
  t.teardown(() => s.close())
  const same = await Promise.all(Array.from({ length: 50 }, () => s.insert(FROM, nonce(7), VB)))
  t.equal(same.filter(Boolean).length, 1)
  const distinct = await Promise.all(Array.from({ length: 200 }, (_, i) => s.insert(FROM, nonce(1000 + i), VB)))
  t.ok(distinct.every(Boolean))
  const lines = (await readFile(join(dir, NONCE_FILE), 'utf8')).trim().split('\n')
  t.equal(lines.length, 201, 'every acknowledged insert is on disk')
})

t.test('durable across reopen; a torn last line is dropped and the file repaired', async (t) => {
  const dir = await makeTempDir(t)
  const a = await NonceStore.open({ dir, now: () => NOW })
  await a.insert(FROM, nonce(1), VB)
  await a.insert(FROM, nonce(2), VB)
  await a.close()
  // A crash mid-write leaves a partial line without its newline (never acknowledged).
  await appendFile(join(dir, NONCE_FILE), `${FROM.toLowerCase()} ${nonce(3)} 18000`)
  const b = await NonceStore.open({ dir, now: () => NOW })
  t.teardown(() => b.close())
  t.equal(b.has(FROM, nonce(1)), true)
  t.equal(b.has(FROM, nonce(2)), true)
  t.equal(b.has(FROM, nonce(3)), false, 'the torn entry was never acknowledged')
  t.equal(await b.insert(FROM, nonce(1), VB), false, 'a used nonce stays used after restart')
  t.equal(await b.insert(FROM, nonce(4), VB), true)
  const text = await readFile(join(dir, NONCE_FILE), 'utf8')
  t.equal(text.split('\n').filter(Boolean).length, 3, 'the repaired file holds 1, 2 and 4')
  t.ok(text.endsWith('\n'))
})

t.test('a corrupt middle line refuses to open rather than forget nonces', async (t) => {
  const dir = await makeTempDir(t)
  await appendFile(join(dir, NONCE_FILE), `garbage\n${FROM.toLowerCase()} ${nonce(1)} 1\n`)
  await t.rejects(NonceStore.open({ dir, now: () => NOW }), /:1: corrupt nonce entry/)
})

t.test('expired entries (validBefore + skew passed) are pruned on open and in memory', async (t) => {
  const dir = await makeTempDir(t)
  let now = NOW
  const a = await NonceStore.open({ dir, now: () => now, skewSeconds: 300 })
  await a.insert(FROM, nonce(1), BigInt(NOW / 1000 + 10))
  await a.insert(FROM, nonce(2), BigInt(NOW / 1000 + 10_000))
  now = NOW + 309_000
  t.equal(a.prune(), 0, 'validBefore + skew not passed yet')
  now = NOW + 311_000
  t.equal(a.prune(), 1)
  await a.close()
  const size = (await stat(join(dir, NONCE_FILE))).size
  const b = await NonceStore.open({ dir, now: () => now, skewSeconds: 300 })
  t.teardown(() => b.close())
  t.equal(b.size, 1)
  t.equal(b.has(FROM, nonce(2)), true)
  t.ok((await stat(join(dir, NONCE_FILE))).size < size, 'the file was compacted')
})
