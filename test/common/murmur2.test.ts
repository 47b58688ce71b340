/**
 * murmur2 as Kafka computes it. Known answers from Kafka's UtilsTest.testMurmur2
 * (apache/kafka clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java), cross-checked against kafkajs'
 * own implementation (node_modules/kafkajs/src/producer/partitioners/default/murmur2.js), and partitionForKey
 * checked against kafkajs' DefaultPartitioner for random keys — so EmbeddedLog and Kafka lay keys out identically.
 */
import { createRequire } from 'node:module'
import { randomBytes } from 'node:crypto'
import t from 'tap'
import { Partitioners } from 'kafkajs'
import { murmur2, partitionForKey } from '../../common/murmur2.ts'
import { murmur2Partitioner } from '../../pipeline/log/KafkaLog.ts'

const require = createRequire(import.meta.url)
const kafkajsMurmur2 = require('kafkajs/src/producer/partitioners/default/murmur2.js') as (key: string | Buffer) => number

const KNOWN: [string, number][] = [
  ['21', -973932308],
  ['foobar', -790332482],
  ['a-little-bit-long-string', -985981536],
  ['a-little-bit-longer-string', -1486304829],
  ['lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', -58897971],
  ['abc', 479470107],
]

t.test("Kafka's known answers", async (t) => {
  for (const [input, expected] of KNOWN) {
    t.equal(murmur2(Buffer.from(input)), expected, `murmur2("${input}")`)
    t.equal(kafkajsMurmur2(input), expected, `kafkajs murmur2("${input}") agrees`)
  }
})

t.test('partitionForKey agrees with kafkajs DefaultPartitioner (and our kafkajs partitioner) for 1000 random keys', async (t) => {
  const kafkajsDefault = Partitioners.DefaultPartitioner()
  const ours = murmur2Partitioner()
  let checked = 0
  for (let i = 0; i < 1000; i++) {
    const key = randomBytes(1 + (i % 40)).toString(i % 2 ? 'hex' : 'base64')
    for (const n of [1, 3, 7, 12]) {
      const partitionMetadata = Array.from({ length: n }, (_, partitionId) => ({ partitionId, leader: 1, partitionErrorCode: 0, replicas: [1], isr: [1] }))
      const args = { topic: 'x', partitionMetadata, message: { key, value: null } }
      const expected = kafkajsDefault(args)
      if (partitionForKey(key, n) !== expected || ours(args) !== expected) t.fail(`key ${key}, ${n} partitions`)
      checked++
    }
  }
  t.equal(checked, 4000)
  // Multi-byte UTF-8 keys hash their UTF-8 bytes in both.
  const partitionMetadata = Array.from({ length: 5 }, (_, partitionId) => ({ partitionId, leader: 1 }))
  t.equal(partitionForKey('ΔBTC-€', 5), kafkajsDefault({ topic: 'x', partitionMetadata, message: { key: 'ΔBTC-€', value: null } } as never))
})
