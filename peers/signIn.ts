/**
 * The sign-in-with-x client side (issue 29) over real HTTP, with the official x402 client
 * (@x402/extensions/sign-in-with-x): a protocol peer the tests (test/helpers/serving/signIn.ts) and the cluster bench
 * (bench/cluster.ts) both use, so it lives in peers/.
 */
import { createSIWxMessage, createSIWxPayload, encodeSIWxHeader } from '@x402/extensions/sign-in-with-x'
import type { LocalAccount } from 'viem'

export interface Challenge {
  info: Record<string, unknown> & { uri: string; domain: string }
  supportedChains: Array<{ chainId: string; type: string }>
}

/** GET /v1/auth/challenge over HTTP: the sign-in-with-x extension object. */
export async function fetchChallenge(url: string): Promise<Challenge> {
  const res = await fetch(`${url}/v1/auth/challenge`)
  const body = (await res.json()) as { data: { 'sign-in-with-x': Challenge } }
  return body.data['sign-in-with-x']
}

/**
 * The SIGN-IN-WITH-X header value the official client builds for a challenge. A tweak (a field changed before
 * signing: a wrong domain, URI, chain, or another address than the signer's) is signed through the official message
 * builder directly, since the official payload builder refuses a challenge not bound to the request's origin.
 */
export async function signChallenge(challenge: Challenge, account: LocalAccount, requestUrl: string, tweak: Record<string, unknown> = {}): Promise<string> {
  const chain = challenge.supportedChains[0]!
  const info = { ...challenge.info, chainId: chain.chainId, type: chain.type }
  if (Object.keys(tweak).length === 0) return encodeSIWxHeader(await createSIWxPayload(info as never, account as never, requestUrl))
  const { address = account.address, ...fields } = tweak
  const tweakedInfo = { ...info, ...fields }
  const signature = await account.signMessage({ message: createSIWxMessage(tweakedInfo as never, String(address)) })
  return encodeSIWxHeader({ ...tweakedInfo, address: String(address), signature } as never)
}
