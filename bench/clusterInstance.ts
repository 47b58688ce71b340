/**
 * One `svc start` of a cluster (SVC_CLUSTER=on) in a child process, on a short simulated history: the instances of
 * bench/cluster.ts and test/app/cluster.test.ts. Its stdout and stderr are kept; `url` resolves once it listens.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import { AssignerProtocol } from 'kafkajs'
import type { KafkaLog } from '../pipeline/log/KafkaLog.ts'
import { LEASES_TOPIC } from '../pipeline/log/KafkaLease.ts'
import { DEFAULT_PARTITIONS } from '../pipeline/topics.ts'

const SVC = fileURLToPath(new URL('../bin/svc.js', import.meta.url))
/** The deployment secret every instance this process spawns shares (SVC_SIGNING_SECRET: 32 bytes, 64 hex digits). */
export const CLUSTER_SIGNING_SECRET = randomBytes(32).toString('hex')

export interface ClusterInstance {
  name: string
  child: ChildProcess
  /** Everything it printed so far (stdout and stderr). */
  out: () => string
  exited: Promise<void>
  /** SIGTERM if it still runs, then waits for its exit (its data dir can be removed once this resolves). */
  stop: () => Promise<void>
  /** Its API's base URL, once it listens (rejects if it exits first). */
  url: Promise<string>
}

export function spawnClusterInstance(o: { name: string; dataDir: string; brokers: string; prefix: string; core?: number | null; env?: Record<string, string> }): ClusterInstance {
  const argv = o.core === undefined || o.core === null ? [process.execPath, SVC, 'start'] : ['taskset', '-c', String(o.core), process.execPath, SVC, 'start']
  const child = spawn(argv[0]!, argv.slice(1), {
    env: {
      ...process.env,
      PORT: '0',
      SVC_DATA_DIR: o.dataDir,
      SVC_SIM_HISTORY_DAYS: '2',
      SVC_TRAIN_DAYS: '1',
      SVC_RECORD_INTERVAL_S: '0',
      SVC_COMPACT_INTERVAL_S: '0',
      SVC_LOG: 'kafka',
      KAFKA_BROKERS: o.brokers,
      KAFKA_TOPIC_PREFIX: o.prefix,
      KAFKA_INSTANCE_ID: o.name,
      SVC_CLUSTER: 'on',
      // Shared by the instances one process spawns: a payer's requests are forwarded between them, signed with it.
      SVC_SIGNING_SECRET: CLUSTER_SIGNING_SECRET,
      LOG_LEVEL: 'warn',
      LOG_FORMAT: 'json',
      CI: 'true',
      ...o.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()))
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()))
  const url = (async () => {
    for (;;) {
      const m = /svc: listening on (http:\/\/\S+)/.exec(out)
      if (m) return m[1]!
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`instance ${o.name} exited before listening:\n${out.slice(-4000)}`)
      await sleep(100)
    }
  })()
  url.catch(() => undefined) // awaited by the caller; a start that fails is its error, not an unhandled rejection
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
    await exited
  }
  return { name: o.name, child, out: () => out, exited, stop, url }
}

/** Who holds each partition of the lease `name` (its group `<prefix>lease.<name>` over `topic`), by instance id, as the group coordinator says. */
async function leaseOwners(log: KafkaLog, prefix: string, name: string, topic: string, partitions: number): Promise<Array<string | null>> {
  const { groups } = await log.admin.describeGroups([`${prefix}lease.${name}`])
  const owners: Array<string | null> = Array.from({ length: partitions }, () => null)
  for (const m of groups[0]?.members ?? []) {
    if (m.memberAssignment.length === 0) continue
    const assigned = AssignerProtocol.MemberAssignment.decode(m.memberAssignment)?.assignment[`${prefix}${topic}`] ?? []
    const info = JSON.parse(AssignerProtocol.MemberMetadata.decode(m.memberMetadata)!.userData.toString('utf8')) as { instance: string }
    for (const p of assigned) owners[p] = info.instance
  }
  return owners
}

/** Who holds each partition of the payers lease (`cluster.payers`), by instance id, as the group coordinator says. */
export function payerOwners(log: KafkaLog, prefix: string, partitions = DEFAULT_PARTITIONS): Promise<Array<string | null>> {
  return leaseOwners(log, prefix, 'payers', 'cluster.payers', partitions)
}

/** Who holds the one-partition lease `name` (`venue-feed`, `delivery`), by instance id, as the group coordinator says. */
export async function leaseHolder(log: KafkaLog, prefix: string, name: string): Promise<string | null> {
  return (await leaseOwners(log, prefix, name, LEASES_TOPIC, 1))[0] ?? null
}
