/**
 * Java-compatible murmur2, as Kafka's DefaultPartitioner (and kafkajs' DefaultPartitioner) computes it, so the
 * embedded log and Kafka place every key on the same partition: partition = toPositive(murmur2(key)) % n.
 * Known answers (Kafka's UtilsTest.testMurmur2): see test/common/murmur2.test.ts.
 */
export function murmur2(data: Buffer): number {
  const length = data.length
  const seed = 0x9747b28c
  const m = 0x5bd1e995
  const r = 24
  let h = seed ^ length
  const length4 = Math.floor(length / 4)
  for (let i = 0; i < length4; i++) {
    const i4 = i * 4
    let k = (data[i4]! & 0xff) + ((data[i4 + 1]! & 0xff) << 8) + ((data[i4 + 2]! & 0xff) << 16) + ((data[i4 + 3]! & 0xff) << 24)
    k = Math.imul(k, m)
    k ^= k >>> r
    k = Math.imul(k, m)
    h = Math.imul(h, m)
    h ^= k
  }
  const rest = length % 4
  const base = length & ~3
  if (rest === 3) h ^= (data[base + 2]! & 0xff) << 16
  if (rest >= 2) h ^= (data[base + 1]! & 0xff) << 8
  if (rest >= 1) {
    h ^= data[base]! & 0xff
    h = Math.imul(h, m)
  }
  h ^= h >>> 13
  h = Math.imul(h, m)
  h ^= h >>> 15
  return h | 0
}

export function partitionForKey(key: string, partitions: number): number {
  return (murmur2(Buffer.from(key, 'utf8')) & 0x7fffffff) % partitions
}
