/**
 * The message the official x402 client signs (createSIWxPayload from @x402/extensions/sign-in-with-x, over
 * SiweMessage.prepareMessage) is, byte for byte, the text the server rebuilds with viem and verifies; and a nonce
 * this service did not issue, or issued and used before a restart, is refused.
 */
import t from 'tap'
import { createSIWxMessage, createSIWxPayload, encodeSIWxHeader } from '@x402/extensions/sign-in-with-x'
import { randomBytes } from 'node:crypto'
import { recoverMessageAddress } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { EmbeddedLog } from '../../../pipeline/log/EmbeddedLog.ts'
import { Journal } from '../../../pipeline/journal/Journal.ts'
import { PAYER_PROOFS } from '../../../pipeline/records/payerProofRecord.ts'
import { PayerSessions } from '../../../product/identity/PayerSessions.ts'
import { ProofRefusal } from '../../../product/identity/ProofRefusal.ts'
import { SignInWithX, siweMessageOf, type SiwxPayload } from '../../../product/identity/SignInWithX.ts'
import { makeTempDir } from '../../helpers/tmp.ts'

const ORIGIN = 'https://api.example.test'
const NOW = Date.parse('2026-11-27T12:00:00.000Z')

async function signed(siwx: SignInWithX, now = NOW): Promise<{ payload: SiwxPayload; header: string; official: string }> {
  const account = privateKeyToAccount(generatePrivateKey())
  const ext = siwx.challenge(`${ORIGIN}/v1/auth/session`, now)
  const info = { ...ext.info, chainId: ext.supportedChains[0]!.chainId, type: ext.supportedChains[0]!.type }
  const payload = (await createSIWxPayload(info, account, `${ORIGIN}/v1/auth/session`)) as SiwxPayload
  return { payload, header: encodeSIWxHeader(payload as never), official: createSIWxMessage(info, account.address) }
}

t.test('the official client signs exactly the text the server verifies', async (t) => {
  const siwx = new SignInWithX(ORIGIN, randomBytes(32), PayerSessions.inMemory())
  const { payload, header, official } = await signed(siwx)
  t.equal(siweMessageOf(payload), official, 'viem createSiweMessage == official SiweMessage text')
  t.equal((await recoverMessageAddress({ message: official, signature: payload.signature as `0x${string}` })).toLowerCase(), payload.address.toLowerCase())
  t.equal(await siwx.verify(header, NOW + 1000), payload.address.toLowerCase(), 'the server verifies it')
})

t.test('a nonce not issued here, and a used nonce across a restart, are refused', async (t) => {
  const dir = await makeTempDir(t, 'svc-siwx-')
  const key = randomBytes(32)
  const reasonOf = async (p: Promise<unknown>) => p.then(() => 'accepted', (e: unknown) => (e instanceof ProofRefusal ? e.reason : String(e)))
  const other = new SignInWithX(ORIGIN, randomBytes(32), PayerSessions.inMemory())
  const foreign = await signed(other)
  const log1 = await EmbeddedLog.open(dir)
  const j1 = await Journal.open({ log: log1, def: PAYER_PROOFS })
  const siwx1 = new SignInWithX(ORIGIN, key, await PayerSessions.restore(j1, NOW))
  t.equal(await reasonOf(siwx1.verify(foreign.header, NOW)), 'SIGN_IN_NONCE_UNKNOWN', 'a nonce under another key is not ours')
  const mine = await signed(siwx1)
  t.equal(await reasonOf(siwx1.verify(mine.header, NOW)), 'accepted')
  await j1.close()
  await log1.close()
  const log2 = await EmbeddedLog.open(dir)
  const j2 = await Journal.open({ log: log2, def: PAYER_PROOFS })
  const siwx2 = new SignInWithX(ORIGIN, key, await PayerSessions.restore(j2, NOW + 1000))
  t.equal(await reasonOf(siwx2.verify(mine.header, NOW + 1000)), 'SIGN_IN_NONCE_REPLAYED', 'used before the restart: still used')
  const fresh = await signed(siwx2, NOW + 1000)
  t.equal(await reasonOf(siwx2.verify(fresh.header, NOW + 2000)), 'accepted', 'a fresh one works')
  await j2.close()
  await log2.close()
})

t.test('sessions: only the hash is journaled; revocation survives a restart', async (t) => {
  const dir = await makeTempDir(t, 'svc-sessions-')
  const log1 = await EmbeddedLog.open(dir)
  const j1 = await Journal.open({ log: log1, def: PAYER_PROOFS })
  const s1 = await PayerSessions.restore(j1, NOW)
  const a = await s1.open('0x' + 'a'.repeat(40), 3600_000, NOW)
  const b = await s1.open('0x' + 'b'.repeat(40), 3600_000, NOW)
  await s1.revoke(b.token, NOW + 1)
  const rows = await j1.readAll()
  t.notOk(JSON.stringify(rows).includes(a.token), 'the token itself is never written')
  await j1.close()
  await log1.close()
  const log2 = await EmbeddedLog.open(dir)
  const j2 = await Journal.open({ log: log2, def: PAYER_PROOFS })
  const s2 = await PayerSessions.restore(j2, NOW + 2)
  t.equal(s2.lookup(a.token, NOW + 2)?.address, '0x' + 'a'.repeat(40), 'a live session is restored')
  t.equal(s2.lookup(b.token, NOW + 2), null, 'a revoked one stays revoked')
  t.equal(s2.lookup(a.token, NOW + 3600_001), null, 'an expired one proves nothing')
  await j2.close()
  await log2.close()
})
