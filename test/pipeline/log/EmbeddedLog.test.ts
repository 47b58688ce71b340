/**
 * EmbeddedLog-only guarantees (docs in pipeline/log/EmbeddedLog.ts): a crash loses no acknowledged send, a torn or
 * corrupt tail is truncated at the last valid frame, segments roll and the index is rebuilt on open, concurrent sends
 * share fsyncs (group commit), and the directory lock keeps a second process out.
 */
import { spawn } from 'node:child_process'
import { appendFile, readdir, readFile, stat, truncate, unlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { partitionForKey } from '../../../common/murmur2.ts'
import { EmbeddedLog } from '../../../pipeline/log/EmbeddedLog.ts'
import type { TopicRecords } from '../../../pipeline/log/EventLog.ts'
import { encodeFrame } from '../../../pipeline/log/frame.ts'
import { makeTempDir } from '../../helpers/tmp.ts'
import { readAll, type TapTest } from '../../helpers/logs.ts'

const FIXTURES = fileURLToPath(new URL('../../fixtures/', import.meta.url))
const REPO = fileURLToPath(new URL('../../../', import.meta.url))

function nodeTs(script: string, args: string[]) {
  return spawn(process.execPath, ['--import', 'tsx', join(FIXTURES, script), ...args], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] })
}

async function segmentFiles(dir: string, topic: string, partition: number): Promise<string[]> {
  const pdir = join(dir, 'topics', topic, String(partition))
  return (await readdir(pdir)).filter((f) => f.endsWith('.log')).sort().map((f) => join(pdir, f))
}

function rec(i: number, key = 'k') {
  return { key, value: Buffer.from(`value-${i}-${'p'.repeat(i % 50)}`), timestamp: 1_700_000_000_000 + i }
}

async function withLog<T>(dir: string, fn: (log: EmbeddedLog) => Promise<T>, options = {}): Promise<T> {
  const log = await EmbeddedLog.open(dir, options)
  try {
    return await fn(log)
  } finally {
    await log.close()
  }
}

t.test('SIGKILL mid-stream loses no acknowledged send and keeps per-key order', async (t) => {
  const dir = await makeTempDir(t, 'svc-log-crash-')
  const writers = 4
  const child = nodeTs('embedded-log-producer.ts', [dir, 'crash', '8192', String(writers)])
  let stderr = ''
  child.stderr.on('data', (d) => (stderr += d))
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()))
  const acked = new Array<number>(writers).fill(-1)
  let total = 0
  const lines = createInterface({ input: child.stdout })
  await new Promise<void>((resolve, reject) => {
    child.on('exit', (code, signal) => reject(new Error(`producer exited early (${code ?? signal}): ${stderr}`)))
    lines.on('line', (line) => {
      const m = /^ack (\d+) (\d+)$/.exec(line)
      if (!m) return
      // Read before the kill: anything printed was acknowledged.
      acked[Number(m[1])] = Math.max(acked[Number(m[1])]!, Number(m[2]))
      if (++total === 400) {
        child.kill('SIGKILL')
        resolve()
      }
    })
  }).catch((err) => t.fail(String(err)))
  await exited
  t.equal(child.signalCode, 'SIGKILL', 'child was killed mid-stream')
  t.ok(acked.every((a) => a >= 0), `every writer had acknowledged sends: ${acked.join(',')}`)

  await withLog(dir, async (log) => {
    const records = await readAll(log, 'crash')
    // Per key (one writer's key k), values must be exactly the prefix of that key's send sequence.
    const byKey = new Map<string, { batch: number; index: number }[]>()
    let misplaced = 0
    for (const r of records) {
      const [w, batch, index] = r.value.toString('utf8').split(':').map(Number)
      if (r.key !== `w${w}-k${index! % 3}`) misplaced++
      byKey.set(r.key, [...(byKey.get(r.key) ?? []), { batch: batch!, index: index! }])
    }
    let keysChecked = 0
    for (let w = 0; w < writers; w++) {
      for (let k = 0; k < 3; k++) {
        const got = byKey.get(`w${w}-k${k}`) ?? []
        const indexes = [0, 1, 2, 3, 4, 5, 6].filter((i) => i % 3 === k)
        const expected = got.map((_, n) => ({ batch: Math.floor(n / indexes.length), index: indexes[n % indexes.length]! }))
        const ordered = JSON.stringify(got) === JSON.stringify(expected)
        const lastBatch = got.length > 0 ? got[got.length - 1]!.batch : -1
        if (!ordered) t.fail(`w${w}-k${k} is not an in-order, gap-free, duplicate-free prefix`)
        if (lastBatch < acked[w]!) t.fail(`w${w}-k${k}: acknowledged batch ${acked[w]} missing (last ${lastBatch})`)
        keysChecked++
      }
    }
    t.equal(keysChecked, 12)
    t.equal(misplaced, 0, 'every record carries the key it was sent with')
    t.pass(`${records.length} records recovered; acknowledged batches per writer: ${acked.join(', ')}`)
    const producer = await log.createProducer()
    await producer.send('crash', [rec(1, 'after-crash')])
    t.equal((await log.lastRecords('crash')).filter((r) => r?.key === 'after-crash').length, 1, 'the recovered log accepts writes')
  })
})

t.test('a torn or corrupt tail is truncated at the last valid frame', async (t) => {
  const dir = await makeTempDir(t, 'svc-log-torn-')
  const opts = { segmentBytes: 2048 }
  await withLog(dir, async (log) => {
    await log.ensureTopics([{ name: 'torn', partitions: 1 }])
    const producer = await log.createProducer()
    for (let i = 0; i < 50; i += 10) await producer.send('torn', Array.from({ length: 10 }, (_, j) => rec(i + j)))
  }, opts)
  const segments = await segmentFiles(dir, 'torn', 0)
  t.ok(segments.length > 1, `segments rolled (${segments.length})`)
  const last = segments[segments.length - 1]!
  const cleanSize = (await stat(last)).size

  // 1. Garbage bytes after the last frame.
  await appendFile(last, Buffer.from('\x00\x00\x00\x2a this is not a frame at all, just garbage'))
  await withLog(dir, async (log) => {
    t.same(await log.endOffsets('torn'), [50], 'garbage dropped, all 50 records kept')
    t.equal((await stat(last)).size, cleanSize, 'file truncated to the last valid frame')
    await (await log.createProducer()).send('torn', [rec(50)])
    t.same(await log.endOffsets('torn'), [51], 'appends continue at the next offset')
  }, opts)

  // 2. Half of a real frame (a write torn by the crash).
  const segmentsNow = await segmentFiles(dir, 'torn', 0)
  const tail = segmentsNow[segmentsNow.length - 1]!
  const frame = encodeFrame(51, 'k', Buffer.from('half-written'), 1)
  await appendFile(tail, frame.subarray(0, Math.floor(frame.length / 2)))
  await withLog(dir, async (log) => t.same(await log.endOffsets('torn'), [51], 'half frame dropped'), opts)

  // 3. A flipped byte inside the last record: CRC mismatch, the record is dropped, earlier ones kept.
  const bytes = await readFile(tail)
  bytes[bytes.length - 3] = bytes[bytes.length - 3]! ^ 0xff
  await writeFile(tail, bytes)
  // 4. A stray segment that does not continue the log (a gap) is removed.
  const stray = join(dir, 'topics', 'torn', '0', `${String(9999).padStart(20, '0')}.log`)
  await writeFile(stray, encodeFrame(9999, 'k', Buffer.from('stray'), 1))
  await withLog(dir, async (log) => {
    t.same(await log.endOffsets('torn'), [50], 'corrupt last record dropped')
    const all = await readAll(log, 'torn')
    t.same(all.map((r) => r.offset), Array.from({ length: 50 }, (_, i) => i), 'offsets 0..49 intact')
    t.same(all.map((r) => r.value.toString()), Array.from({ length: 50 }, (_, i) => rec(i).value.toString()), 'values intact')
    t.notOk((await segmentFiles(dir, 'torn', 0)).includes(stray), 'stray segment deleted')
  }, opts)
})

t.test('segments roll and the index is rebuilt on open', async (t) => {
  const dir = await makeTempDir(t, 'svc-log-roll-')
  const opts = { segmentBytes: 1024, maxBatchRecords: 64 }
  const sent = Array.from({ length: 600 }, (_, i) => rec(i, `key-${i % 13}`))
  const before = await withLog(dir, async (log) => {
    await log.ensureTopics([{ name: 'roll', partitions: 3 }])
    const producer = await log.createProducer()
    for (let i = 0; i < sent.length; i += 100) await producer.send('roll', sent.slice(i, i + 100))
    return { all: await readAll(log, 'roll'), last: await log.lastRecords('roll'), ends: await log.endOffsets('roll') }
  }, opts)
  t.equal(before.all.length, 600)
  let files = 0
  for (let p = 0; p < 3; p++) files += (await segmentFiles(dir, 'roll', p)).length
  t.ok(files > 20, `${files} segment files`)
  await withLog(dir, async (log) => {
    t.same(await log.endOffsets('roll'), before.ends, 'end offsets after reopen')
    t.same(await log.lastRecords('roll'), before.last, 'last records after reopen')
    t.same(await readAll(log, 'roll'), before.all, 'every record readable after reopen')
  }, opts)
})

t.test('the newest records are read from memory: shared objects, equal to the disk read; older ones from disk', async (t) => {
  const dir = await makeTempDir(t, 'svc-log-recent-')
  const sent = Array.from({ length: 300 }, (_, i) => rec(i))
  const recentBytes = 4096
  const inProcess = await withLog(dir, async (log) => {
    await log.ensureTopics([{ name: 'recent', partitions: 1 }])
    const producer = await log.createProducer()
    for (let i = 0; i < sent.length; i += 50) await producer.send('recent', sent.slice(i, i + 50))
    const tailA = await log.readBatch('recent', 0, 290)
    const tailB = await log.readBatch('recent', 0, 290)
    t.equal(tailA.length, 10)
    t.ok(tailA.every((r, i) => r === tailB[i]), 'two readers of the tail get the very same record objects')
    const oldA = await log.readBatch('recent', 0, 0)
    const oldB = await log.readBatch('recent', 0, 0)
    t.ok(oldA.length > 0 && oldA[0] !== oldB[0], 'records past the window come from disk, a fresh object per read')
    t.same(oldA, oldB)
    return { all: await readAll(log, 'recent'), last: await log.lastRecords('recent') }
  }, { recentBytes, maxBatchRecords: 64 })
  t.same(inProcess.all.map((r) => r.value.toString()), sent.map((r) => r.value.toString()), 'every record, in order, across the memory/disk boundary')
  await withLog(dir, async (log) => {
    t.same(await readAll(log, 'recent'), inProcess.all, 'memory reads equal the disk reads after reopen')
    t.same(await log.lastRecords('recent'), inProcess.last)
  })
  await withLog(dir, async (log) => {
    const producer = await log.createProducer()
    await producer.send('recent', [rec(300)])
    const [a] = await log.readBatch('recent', 0, 300)
    const [b] = await log.readBatch('recent', 0, 300)
    t.ok(a !== b && a!.value.equals(b!.value), 'recentBytes 0: every read goes to disk')
  }, { recentBytes: 0 })
  const closed = await EmbeddedLog.open(dir)
  await (await closed.createProducer()).send('recent', [rec(301)])
  await closed.close()
  await t.rejects(closed.lastRecords('recent'), { code: 'LOG_CLOSED' }, 'a closed log reads nothing, not even what it holds in memory')
  await t.rejects(closed.readBatch('recent', 0, 301), { code: 'LOG_CLOSED' })
})

t.test('concurrent sends share fsync rounds (group commit)', async (t) => {
  const dir = await makeTempDir(t, 'svc-log-gc-')
  await withLog(dir, async (log) => {
    await log.ensureTopics([{ name: 'gc', partitions: 3 }])
    const producer = await log.createProducer()
    const rounds = log.syncRounds
    await Promise.all(Array.from({ length: 50 }, (_, i) => producer.send('gc', [rec(i, `k${i}`)])))
    const used = log.syncRounds - rounds
    t.ok(used >= 1 && used < 50, `50 concurrent sends used ${used} fsync rounds`)
    t.equal((await log.endOffsets('gc')).reduce((a, b) => a + b, 0), 50)
  })
})

t.test('the directory lock keeps a second opener out; a stale lock is taken over', async (t) => {
  const dir = await makeTempDir(t, 'svc-log-lock-')
  const runChild = async (): Promise<string> => {
    const child = nodeTs('embedded-log-open.ts', [dir])
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    await new Promise((resolve) => child.on('exit', resolve))
    return out.trim()
  }
  const log = await EmbeddedLog.open(dir)
  await t.rejects(EmbeddedLog.open(dir), { code: 'LOG_LOCKED' }, 'second open in this process')
  t.equal(await runChild(), 'error LOG_LOCKED', 'second process is refused')
  await log.close()
  t.equal(await runChild(), 'opened', 'free after close')

  const dead = spawn(process.execPath, ['-e', ''])
  await new Promise((resolve) => dead.on('exit', resolve))
  await writeFile(join(dir, 'LOCK'), JSON.stringify({ pid: dead.pid, hostname: 'x', since: 'then' }))
  const again = await EmbeddedLog.open(dir)
  t.match(await readFile(join(dir, 'LOCK'), 'utf8'), `"pid":${process.pid},`, 'stale lock of a dead pid taken over')
  await again.close()
  await writeFile(join(dir, 'LOCK'), 'torn')
  await (await EmbeddedLog.open(dir)).close()
  t.pass('torn lock file taken over')
})

t.test('options are validated by JSON Schema, naming the field', async (t) => {
  const dir = await makeTempDir(t, 'svc-log-opts-')
  await t.rejects(EmbeddedLog.open(dir, { segmentBytes: 10 }), { code: 'LOG_CONFIG', message: /segmentBytes/ })
  await t.rejects(EmbeddedLog.open(dir, { bogus: 1 } as never), { code: 'LOG_CONFIG', message: /bogus/ })
  await withLog(dir, async (log) => t.equal(log.kind, 'embedded'))
})

t.test('an idle consumer is woken by a send (no polling)', async (t) => {
  const dir = await makeTempDir(t, 'svc-log-wake-')
  await withLog(dir, async (log) => {
    await log.ensureTopics([{ name: 'wake', partitions: 1 }])
    const consumer = await log.createConsumer({ groupId: 'w', topics: ['wake'] })
    let resolveGot: (at: number) => void = () => {}
    const got = new Promise<number>((r) => (resolveGot = r))
    await consumer.run(async () => resolveGot(Date.now()))
    const cpuBefore = process.cpuUsage()
    await new Promise((r) => setTimeout(r, 300))
    const idleCpuMs = (process.cpuUsage(cpuBefore).user + process.cpuUsage(cpuBefore).system) / 1000
    t.ok(idleCpuMs < 100, `idle consumer used ${idleCpuMs.toFixed(1)} ms CPU in 300 ms`)
    const sentAt = Date.now()
    await (await log.createProducer()).send('wake', [rec(1)])
    t.ok((await got) - sentAt < 3000, 'delivered promptly after the send')
    await consumer.stop()
    await t.rejects(
      (async () => {
        const c1 = await log.createConsumer({ groupId: 'busy', topics: ['wake'] })
        const c2 = await log.createConsumer({ groupId: 'busy', topics: ['wake'] })
        await c1.run(async () => {})
        try {
          await c2.run(async () => {})
        } finally {
          await c1.stop()
        }
      })(),
      { code: 'LOG_GROUP_BUSY' },
      'two running consumers of one group and topic are refused',
    )
  })
})

t.test('a consumer stopped while run() is still positioning never starts delivering', async (t) => {
  const dir = await makeTempDir(t, 'svc-log-stop-early-')
  await withLog(dir, async (log) => {
    await log.ensureTopics([{ name: 'early', partitions: 2 }])
    const consumer = await log.createConsumer({ groupId: 'e', topics: ['early'] })
    let delivered = 0
    // Not awaited, as Journal.readAll does on an empty topic: stop() comes before run() positioned the consumer.
    const running = consumer.run(async (batch) => {
      delivered += batch.records.length
    })
    await consumer.stop()
    await running
    await (await log.createProducer()).send('early', [rec(1, 'a'), rec(2, 'b')])
    await new Promise((r) => setTimeout(r, 100))
    t.equal(delivered, 0, 'nothing delivered after stop()')
    const again = await log.createConsumer({ groupId: 'e', topics: ['early'] })
    await again.run(async () => {})
    await again.stop()
    t.pass('the group was released')
  })
})

// ---- atomic units (sendAtomic): all or nothing across partitions and topics ----

const DRAWS = 'billing.draws'
const DECISIONS = 'decisions'

interface Part {
  unit: string
  part: string
}

function partOf(r: { value: Buffer }): Part {
  return JSON.parse(r.value.toString('utf8')) as Part
}

function paidUnit(unit: string, account: string, asset: string): TopicRecords[] {
  const rec = (key: string, part: string) => ({ key, value: Buffer.from(JSON.stringify({ unit, part })), timestamp: 1_700_000_000_000 })
  return [
    { topic: DRAWS, records: [rec(account, 'debit'), rec(account, 'receipt')] },
    { topic: DECISIONS, records: [rec(asset, 'decision')] },
  ]
}

/** Every record of the topics, grouped by unit; also checks that each partition's offsets are dense from 0. */
async function unitsIn(t: TapTest, log: EmbeddedLog, topics: string[]): Promise<Map<string, string[]>> {
  const units = new Map<string, string[]>()
  for (const topic of topics) {
    const records = await readAll(log, topic)
    const ends = await log.endOffsets(topic)
    for (let p = 0; p < ends.length; p++) {
      const offsets = records.filter((r) => r.partition === p).map((r) => r.offset)
      if (offsets.length !== ends[p] || offsets.some((o, i) => o !== i)) t.fail(`${topic}/${p}: offsets are not 0..${ends[p]! - 1}`)
    }
    for (const r of records) {
      const { unit, part } = partOf(r)
      units.set(unit, [...(units.get(unit) ?? []), part])
    }
  }
  return units
}

const frameVersionsIn = (bytes: Buffer): number[] => {
  const versions: number[] = []
  for (let at = 0; at + 8 < bytes.length; at += 8 + bytes.readUInt32BE(at)) versions.push(bytes.readUInt8(at + 8))
  return versions
}

t.test('a unit torn at any byte of one partition is dropped from every partition; earlier units stay whole', async (t) => {
  const clean = await makeTempDir(t, 'svc-log-unit-clean-')
  const accounts = ['acct-a', 'acct-b', 'acct-c', 'acct-d']
  const sizes: Record<string, { before: number; after: number; file: string }> = {}
  const segmentOf = async (topic: string, key: string) => (await segmentFiles(clean, topic, partitionForKey(key, 3)))[0]!
  await withLog(clean, async (log) => {
    await log.ensureTopics([
      { name: DRAWS, partitions: 3 },
      { name: DECISIONS, partitions: 3 },
    ])
    const producer = await log.createProducer()
    for (let i = 0; i < 4; i++) await producer.sendAtomic(paidUnit(`u${i}`, accounts[i]!, 'BTC'))
    // The last unit shares its draws partition with u0..u3 via acct-a and its decisions partition via BTC.
    const drawsFile = await segmentOf(DRAWS, 'acct-a')
    const decisionsFile = await segmentOf(DECISIONS, 'BTC')
    sizes.draws = { before: (await stat(drawsFile)).size, after: 0, file: drawsFile }
    sizes.decisions = { before: (await stat(decisionsFile)).size, after: 0, file: decisionsFile }
    await producer.sendAtomic(paidUnit('last', 'acct-a', 'BTC'))
    sizes.draws.after = (await stat(drawsFile)).size
    sizes.decisions.after = (await stat(decisionsFile)).size
  })

  // Recovery only rewrites the two segments the last unit wrote to, so each cut starts from their clean bytes.
  const pristine = new Map(await Promise.all(Object.values(sizes).map(async ({ file }) => [file, await readFile(file)] as const)))
  for (const [which, { before, after, file }] of Object.entries(sizes)) {
    t.ok(after > before, `${which}: the last unit wrote ${after - before} bytes to ${file.slice(clean.length)}`)
    let wrong = 0
    for (let cut = before; cut <= after; cut++) {
      for (const [f, bytes] of pristine) await writeFile(f, bytes)
      await truncate(file, cut)
      const units = await withLog(clean, async (log) => {
        const found = new Map<string, number>()
        for (const topic of [DRAWS, DECISIONS]) {
          for (let p = 0; p < 3; p++) {
            const records = await log.readBatch(topic, p, 0)
            if (records.length !== (await log.endOffsets(topic))[p]) t.fail(`${topic}/${p}: one batch should hold the whole partition`)
            for (const r of records) found.set(partOf(r).unit, (found.get(partOf(r).unit) ?? 0) + 1)
          }
        }
        return found
      })
      const earlier = ['u0', 'u1', 'u2', 'u3'].every((u) => units.get(u) === 3)
      const last = units.get('last') ?? 0
      if (!earlier || last !== (cut === after ? 3 : 0)) {
        wrong++
        t.fail(`${which} cut at byte ${cut}: earlier units whole=${earlier}, last unit has ${last} of 3 records`)
      }
    }
    t.equal(wrong, 0, `${which}: all ${after - before + 1} cuts leave the last unit whole (uncut) or absent, and u0..u3 whole`)
  }
})

t.test('SIGKILL while writing units: every unit whole or absent, every acknowledged one present, per-writer prefixes', async (t) => {
  const dir = await makeTempDir(t, 'svc-log-unit-crash-')
  const writers = 8
  // Bytes of every segment of both topics: what the crash left, to compare with what recovery keeps.
  const logBytes = async (): Promise<number> => {
    let bytes = 0
    for (const topic of [DRAWS, DECISIONS]) for (let p = 0; p < 3; p++) for (const f of await segmentFiles(dir, topic, p)) bytes += (await stat(f)).size
    return bytes
  }
  for (let round = 0; round < 3; round++) {
    const child = nodeTs('embedded-log-units.ts', [dir, String(round), '1024', String(writers)])
    let stderr = ''
    child.stderr.on('data', (d) => (stderr += d))
    const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()))
    const acked = new Array<number>(writers).fill(-1)
    const killAt = 150 + round * 60
    let total = 0
    const lines = createInterface({ input: child.stdout })
    await new Promise<void>((resolve, reject) => {
      child.on('exit', (code, signal) => reject(new Error(`unit writer exited early (${code ?? signal}): ${stderr}`)))
      lines.on('line', (line) => {
        const m = /^ack (\d+) (\d+)$/.exec(line)
        if (!m) return
        acked[Number(m[1])] = Math.max(acked[Number(m[1])]!, Number(m[2]))
        if (++total === killAt) {
          child.kill('SIGKILL')
          resolve()
        }
      })
    }).catch((err) => t.fail(String(err)))
    await exited
    t.equal(child.signalCode, 'SIGKILL', `round ${round}: writer killed after ${total} acknowledgements`)

    const crashed = await logBytes()
    await withLog(dir, async (log) => {
      const units = await unitsIn(t, log, [DRAWS, DECISIONS])
      let partial = 0
      for (const [unit, parts] of units) {
        const kinds = parts.filter((p) => p !== 'note').sort().join(',')
        if (kinds !== 'debit,decision,receipt') {
          partial++
          t.fail(`unit ${unit} has ${kinds}`)
        }
      }
      // Small segments make a transaction's writes many syscalls apart, so a kill often tears one (recovery cuts it).
      t.equal(partial, 0, `round ${round}: all ${units.size} units in the log are whole (recovery cut ${crashed - (await logBytes())} bytes)`)
      let lost = 0
      let gaps = 0
      for (let w = 0; w < writers; w++) {
        const seqs = [...units.keys()].filter((u) => u.startsWith(`${round}:${w}:`)).map((u) => Number(u.split(':')[2])).sort((a, b) => a - b)
        if (seqs.some((s, i) => s !== i)) gaps++
        if ((seqs.at(-1) ?? -1) < acked[w]!) lost++
      }
      t.equal(lost, 0, `round ${round}: every acknowledged unit survived (acked up to ${acked.join(',')})`)
      t.equal(gaps, 0, `round ${round}: each writer's units are a gap-free prefix of what it sent`)
      // Per account, draws hold debit, receipt (and a note after every third unit) in send order.
      const draws = await readAll(log, DRAWS)
      let disordered = 0
      for (let w = 0; w < writers; w++) {
        const got = draws.filter((r) => r.key === `account-${round}-${w}`).map((r) => `${partOf(r).unit.split(':')[2]}:${partOf(r).part}`)
        const want = got.length === 0 ? [] : Array.from({ length: Number(got.at(-1)!.split(':')[0]) + 1 }, (_, s) => [`${s}:debit`, `${s}:receipt`, ...(s % 3 === 2 ? [`${s}:note`] : [])]).flat()
        // The last unit's note may be missing (killed between its ack and the note); nothing else may.
        if (JSON.stringify(got) !== JSON.stringify(want.slice(0, got.length)) || got.length < want.length - 1) disordered++
      }
      t.equal(disordered, 0, `round ${round}: every account's draws in send order`)
    })
  }
})

t.test('truncation cascades: a unit cut in one partition takes the later units of its other partitions with it', async (t) => {
  const dir = await makeTempDir(t, 'svc-log-unit-cascade-')
  const rec = (name: string) => ({ key: 'k', value: Buffer.from(JSON.stringify({ unit: name, part: name })), timestamp: 1 })
  const one = (topic: string, name: string) => ({ topic, records: [rec(name)] })
  let aStart = 0
  await withLog(dir, async (log) => {
    await log.ensureTopics(['x', 'y', 'z', 'w'].map((name) => ({ name, partitions: 1 })))
    const producer = await log.createProducer()
    for (const topic of ['x', 'y', 'z']) await producer.send(topic, [rec(`${topic}-base`)])
    aStart = (await stat((await segmentFiles(dir, 'x', 0))[0]!)).size
    await producer.sendAtomic([one('x', 'A'), one('y', 'A')]) // A: x + y
    await producer.sendAtomic([one('y', 'B'), one('z', 'B')]) // B: y + z, after A in y
    await producer.send('z', [rec('z-plain-after-B')])
    await producer.sendAtomic([one('x', 'C')]) // after A in x
    await producer.sendAtomic([one('w', 'D'), one('x', 'D')]) // D: w + x, after C in x
    await producer.sendAtomic([one('w', 'E')]) // after D in w
  })
  // Tear A's frame in x: A loses x, so y is cut at A (taking B), so z is cut at B (taking the plain record after it),
  // and x loses C and D by the prefix rule, so w is cut at D (taking E).
  await truncate((await segmentFiles(dir, 'x', 0))[0]!, aStart + 7)
  const contents = async () =>
    withLog(dir, async (log) => Object.fromEntries(await Promise.all(['x', 'y', 'z', 'w'].map(async (topic) => [topic, (await readAll(log, topic)).map((r) => partOf(r).part)] as const))))
  const expected = { x: ['x-base'], y: ['y-base'], z: ['z-base'], w: [] }
  t.same(await contents(), expected, 'each partition keeps exactly what precedes the cascade')
  t.same(await contents(), expected, 'a second open finds nothing more to cut')
  await withLog(dir, async (log) => {
    const producer = await log.createProducer()
    await producer.sendAtomic([one('x', 'F'), one('y', 'F'), one('w', 'F')])
  })
  t.same(await contents(), { x: ['x-base', 'F'], y: ['y-base', 'F'], z: ['z-base'], w: ['F'] }, 'a unit written after recovery survives reopening (its transaction id is new)')
})

t.test('plain sends still write version-1 frames, which open beside version-2 unit frames', async (t) => {
  const dir = await makeTempDir(t, 'svc-log-unit-v1-')
  await withLog(dir, async (log) => {
    await log.ensureTopics([{ name: 'mixed', partitions: 1 }])
    const producer = await log.createProducer()
    await producer.send('mixed', [rec(0), rec(1)])
    await producer.sendAtomic([{ topic: 'mixed', records: [rec(2), rec(3)] }])
    await producer.send('mixed', [rec(4)])
  })
  const [segment] = await segmentFiles(dir, 'mixed', 0)
  t.same(frameVersionsIn(await readFile(segment!)), [1, 1, 2, 2, 1], 'frame versions on disk: plain, plain, unit, unit, plain')
  // A log written before version 2 existed is all version-1 frames; encodeFrame without a transaction writes those.
  const old = await makeTempDir(t, 'svc-log-unit-v1-old-')
  await withLog(old, async (log) => log.ensureTopics([{ name: 'old', partitions: 1 }]))
  await writeFile(join(old, 'topics', 'old', '0', `${'0'.repeat(20)}.log`), Buffer.concat([0, 1, 2].map((i) => encodeFrame(i, 'k', rec(i).value, rec(i).timestamp))))
  await withLog(old, async (log) => {
    t.same((await readAll(log, 'old')).map((r) => r.value.toString()), [0, 1, 2].map((i) => rec(i).value.toString()), 'a version-1-only log opens unchanged')
  })
  await withLog(dir, async (log) => {
    const all = await readAll(log, 'mixed')
    t.same(all.map((r) => r.value.toString()), [0, 1, 2, 3, 4].map((i) => rec(i).value.toString()), 'both versions read back in order')
    t.same(all.map((r) => r.timestamp), [0, 1, 2, 3, 4].map((i) => rec(i).timestamp), 'timestamps of both versions')
  })
})

t.test('concurrent units share fsync rounds (group commit) and each resolves only when durable', async (t) => {
  const dir = await makeTempDir(t, 'svc-log-unit-gc-')
  await withLog(dir, async (log) => {
    await log.ensureTopics([
      { name: DRAWS, partitions: 3 },
      { name: DECISIONS, partitions: 3 },
    ])
    const producer = await log.createProducer()
    const rounds = log.syncRounds
    let resolved = 0
    let unreadable = 0
    await Promise.all(
      Array.from({ length: 64 }, async (_, i) => {
        await producer.sendAtomic(paidUnit(`g${i}`, `acct-${i}`, `asset-${i % 3}`))
        // Every resolved unit is already readable: at least one decision per resolved unit.
        if ((await log.endOffsets(DECISIONS)).reduce((a, b) => a + b, 0) < ++resolved) unreadable++
      }),
    )
    const used = log.syncRounds - rounds
    t.ok(used >= 1 && used < 16, `64 concurrent units used ${used} fsync rounds`)
    t.equal(unreadable, 0, 'a resolved unit is readable at once (embedded)')
    t.equal((await log.endOffsets(DRAWS)).reduce((a, b) => a + b, 0), 128)
    t.equal((await log.endOffsets(DECISIONS)).reduce((a, b) => a + b, 0), 64)
  })
})

t.test('after a clean close an open scans only the last segment; older ones are indexed on first read', async (t) => {
  // Issue 31: a year of ticks is gigabytes of segments, and scanning all of them made a restart grow with history.
  const dir = await makeTempDir(t, 'svc-log-clean-')
  const opts = { segmentBytes: 1024, maxBatchRecords: 64 }
  await withLog(dir, async (log) => {
    await log.ensureTopics([{ name: 'clean', partitions: 1 }])
    await (await log.createProducer()).send('clean', Array.from({ length: 200 }, (_, i) => rec(i)))
  }, opts)
  const marker = join(dir, 'clean-shutdown.json')
  t.ok((await stat(marker)).isFile(), 'a clean close leaves the clean-shutdown marker')
  const segments = await segmentFiles(dir, 'clean', 0)
  t.ok(segments.length > 3, `segments rolled (${segments.length})`)
  // A flipped byte in an old segment, its size unchanged: an open that scanned it would truncate the log there.
  const old = segments[1]!
  const bytes = await readFile(old)
  bytes[20] = bytes[20]! ^ 0xff
  await writeFile(old, bytes)
  await withLog(dir, async (log) => {
    await t.rejects(stat(marker), { code: 'ENOENT' }, 'the open consumed the marker (a crash from here on scans everything)')
    t.same(await log.endOffsets('clean'), [200], 'the end is known without scanning the old segments')
    t.equal((await log.readBatch('clean', 0, 0)).length > 0, true, 'an intact old segment reads')
    await t.rejects(log.readBatch('clean', 0, Number(/(\d{20})\.log$/.exec(old)![1])), { code: 'LOG_CORRUPT' }, 'the corrupt old segment fails on its first read, not at open')
  }, opts)
  // Restore the byte: the marker of that (clean) close is valid, every record reads back, and appends continue.
  bytes[20] = bytes[20]! ^ 0xff
  await writeFile(old, bytes)
  await withLog(dir, async (log) => {
    const all = await readAll(log, 'clean')
    t.same(all.map((r) => r.offset), Array.from({ length: 200 }, (_, i) => i), 'every offset reads back from lazily indexed segments')
    t.same(all.map((r) => r.value.toString()), Array.from({ length: 200 }, (_, i) => rec(i).value.toString()), 'values intact')
    t.same(all.map((r) => r.timestamp), Array.from({ length: 200 }, (_, i) => rec(i).timestamp), 'timestamps intact')
    await (await log.createProducer()).send('clean', [rec(200)])
    const infos = await log.segments('clean', 0)
    t.equal(infos.at(-1)!.endOffset, 201, 'appends continue at the next offset')
    t.ok(infos.slice(0, -1).every((s) => s.lastTimestamp !== null), 'retention sees every old segment\'s last timestamp')
  }, opts)
  // Without the marker (a crash, a kill) every segment is scanned, as before.
  await unlink(marker)
  await withLog(dir, async (log) => t.equal((await readAll(log, 'clean')).length, 201, 'no marker: the full scan reads everything'), opts)
  // A marker that does not match the files is not used: garbage after the first segment's frames is a torn tail to
  // the full scan, which cuts the log there (the lazy open would have kept all 201).
  const firstRecords = Number(/(\d{20})\.log$/.exec(segments[1]!)![1])
  await appendFile(segments[0]!, Buffer.from('garbage after a clean close'))
  await withLog(dir, async (log) => t.same(await log.endOffsets('clean'), [firstRecords], 'a grown segment: the marker is not used and the scan finds the torn frame'), opts)
})
