import t from 'tap'
import { decodeCursor, encodeCursor } from '../../common/Cursor.ts'
import { ServiceError } from '../../common/ServiceError.ts'

t.test('a cursor round-trips its position within its scope', async (t) => {
  for (const parts of [[0], [12, 'abc'], ['2026-03-01T00:00:00.000Z', 'dec_1'], ['ünï', -3.5]]) {
    const token = encodeCursor('feed', parts)
    t.match(token, /^[A-Za-z0-9_-]+$/, 'url-safe without escaping')
    t.same(decodeCursor('feed', token), parts)
  }
})

t.test('a token from another scope, version or nowhere is INVALID_CURSOR naming its field', async (t) => {
  const bad = [encodeCursor('draws', [1]), Buffer.from('c0.feed.[1]').toString('base64url'), 'not a cursor!', '', 'x'.repeat(2000), Buffer.from('c1.feed.{"a":1}').toString('base64url'), Buffer.from('c1.feed.[null]').toString('base64url')]
  for (const token of bad) {
    try {
      decodeCursor('feed', token, 'after')
      t.fail(`accepted ${token.slice(0, 40)}`)
    } catch (err) {
      t.ok(err instanceof ServiceError && err.code === 'VALIDATION' && err.detail.reason === 'INVALID_CURSOR' && err.detail.field === 'after', `refused ${token.slice(0, 40)}`)
    }
  }
  t.throws(() => encodeCursor('Feed.x', [1]), /scope/)
})
