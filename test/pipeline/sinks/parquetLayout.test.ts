import t from 'tap'
import {
  decodeHiveValue,
  encodeHiveValue,
  isTempFileName,
  parseSealedFileName,
  sealedFileName,
  tempFileName,
  utcDate,
} from '../../../pipeline/sinks/parquetLayout.ts'

t.test('sealed names carry partition and offset range, zero-padded to 12 digits', async (t) => {
  const name = sealedFileName({ partition: 2, firstOffset: 7, lastOffset: 1234 })
  t.equal(name, 'p2-000000000007-000000001234.parquet')
  t.same(parseSealedFileName(name), { partition: 2, firstOffset: 7, lastOffset: 1234 })
  t.same(parseSealedFileName(sealedFileName({ partition: 0, firstOffset: 1e12, lastOffset: 1e12 + 5 })), { partition: 0, firstOffset: 1e12, lastOffset: 1e12 + 5 })
  t.equal(parseSealedFileName('_schema.parquet'), null, 'the schema anchor is not a sealed file')
  const tmp = tempFileName(name)
  t.equal(tmp, '.p2-000000000007-000000001234.parquet.tmp')
  t.ok(isTempFileName(tmp))
  t.equal(parseSealedFileName(tmp), null)
  t.notOk(tmp.endsWith('.parquet'), 'readers globbing *.parquet never match a temp file')
})

t.test('hive values are percent-encoded path segments that decode back', async (t) => {
  t.equal(encodeHiveValue('BTC'), 'BTC')
  t.equal(encodeHiveValue('*'), '%2A')
  t.equal(encodeHiveValue('../x'), '%2E%2E%2Fx')
  for (const v of ['*', 'BTC', 'a b/c', 'é']) t.equal(decodeHiveValue(encodeHiveValue(v)), v)
  t.throws(() => encodeHiveValue(''))
  t.equal(utcDate(Date.parse('2024-03-01T23:59:59.999Z')), '2024-03-01')
  t.equal(utcDate(Date.parse('2024-03-02T00:00:00.000Z')), '2024-03-02')
})
