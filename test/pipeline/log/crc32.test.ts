/** CRC-32 framing checksum. Known answers: the CRC catalogue check value (CRC-32/ISO-HDLC: "123456789" → 0xCBF43926). */
import t from 'tap'
import { randomBytes } from 'node:crypto'
import { crc32, crc32Table } from '../../../pipeline/log/crc32.ts'

t.test('known answers', async (t) => {
  t.equal(crc32Table(Buffer.from('123456789')), 0xcbf43926)
  t.equal(crc32(Buffer.from('123456789')), 0xcbf43926)
  t.equal(crc32Table(Buffer.alloc(0)), 0)
  t.equal(crc32Table(Buffer.from('The quick brown fox jumps over the lazy dog')), 0x414fa339)
})

t.test('table and native (when present) agree on random data', async (t) => {
  for (let i = 0; i < 200; i++) {
    const data = randomBytes(i * 7)
    if (crc32(data) !== crc32Table(data)) t.fail(`mismatch at length ${data.length}`)
  }
  t.pass('200 random buffers agree')
})
