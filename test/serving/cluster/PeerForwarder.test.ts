/**
 * The peer token of a request forwarded between instances (serving/cluster/PeerForwarder.ts): it verifies for the
 * request line it was made for, within PEER_TOKEN_WINDOW_MS of its time, under the same signing secret, and for
 * nothing else.
 */
import { randomBytes } from 'node:crypto'
import t from 'tap'
import { PEER_TOKEN_WINDOW_MS, PeerForwarder } from '../../../serving/cluster/PeerForwarder.ts'

const secret = randomBytes(32)
const peers = new PeerForwarder(secret)
const NOW = Date.parse('2026-11-28T19:00:00Z')
const target = '/v1/billing/credits?payer=0x1111111111111111111111111111111111111111'

t.test('a token verifies for its request line within the window, under the same secret', async (t) => {
  const token = peers.token('GET', target, NOW)
  t.ok(peers.verify(token, 'GET', target, NOW), 'as made')
  t.ok(new PeerForwarder(Buffer.from(secret)).verify(token, 'GET', target, NOW + PEER_TOKEN_WINDOW_MS), 'on another instance with the same secret, at the edge of the window')
  t.ok(peers.verify(token, 'GET', target, NOW - PEER_TOKEN_WINDOW_MS), 'a receiver whose clock is behind')
})

t.test('and for nothing else', async (t) => {
  const token = peers.token('GET', target, NOW)
  t.notOk(peers.verify(token, 'POST', target, NOW), 'another method')
  t.notOk(peers.verify(token, 'GET', '/v1/billing/draws?payer=0x1111111111111111111111111111111111111111', NOW), 'another path')
  t.notOk(peers.verify(token, 'GET', `${target}&limit=1`, NOW), 'another query')
  t.notOk(peers.verify(token, 'GET', target, NOW + PEER_TOKEN_WINDOW_MS + 1), 'too old')
  t.notOk(new PeerForwarder(randomBytes(32)).verify(token, 'GET', target, NOW), 'another secret')
  const [ms, mac] = token.split('.') as [string, string]
  t.notOk(peers.verify(`${Number(ms) + 1}.${mac}`, 'GET', target, NOW), 'its time changed')
  t.notOk(peers.verify(mac, 'GET', target, NOW), 'no time')
  t.notOk(peers.verify(`${ms}.${mac.slice(2)}`, 'GET', target, NOW), 'a shortened MAC')
  t.notOk(peers.verify('', 'GET', target, NOW), 'empty')
})
