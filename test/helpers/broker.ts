/**
 * A Kafka broker of the test's own (scripts/kafka-broker.sh in its own state dir), for tests that stop and start it:
 * the shared broker of test/run.sh ($KAFKA_BROKERS) must never go away under the other test files.
 *
 *   const broker = await ownBroker(t)        // started; purged on teardown
 *   await broker.stop()                      // data kept
 *   await broker.start()                     // same data, same address
 *
 * Skipped with a message without Java or the broker jars (`bash scripts/kafka-broker.sh fetch`); under CI=true that
 * fails instead, as test/helpers/logs.ts does for a missing broker.
 */
import { execFile } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { TapTest } from './logs.ts'
import { makeTempDir } from './tmp.ts'

const run = promisify(execFile)
const ROOT = join(import.meta.dirname, '..', '..')
const SCRIPT = join(ROOT, 'scripts', 'kafka-broker.sh')

export interface OwnBroker {
  /** host:port list, as KAFKA_BROKERS takes it. */
  readonly brokers: string
  stop(): Promise<void>
  start(): Promise<void>
  /** Adds a broker to this one's cluster (`kafka-broker.sh add`), purged on teardown; the cluster's host:port list. */
  add(t: TapTest): Promise<string>
}

/** The tap `skip` option of a test that runs its own broker: false when it may run, else why not (fails under CI=true). */
export function ownBrokerSkip(t: { fail(message: string): unknown }): string | false {
  const lib = join(ROOT, '.ci', 'kafka', 'lib')
  const jars = existsSync(lib) && readdirSync(lib).some((f) => f.startsWith('kafka_2.13-'))
  const java = (process.env.PATH ?? '').split(':').some((dir) => dir !== '' && existsSync(join(dir, 'java')))
  const reason = !java ? 'no java on PATH' : !jars ? 'no broker jars in .ci/kafka/lib (bash scripts/kafka-broker.sh fetch)' : null
  if (!reason) return false
  if (process.env.CI === 'true') {
    t.fail(`CI=true but ${reason}: the broker tests must run in CI`)
    return 'CI without a broker'
  }
  return `own-broker test skipped: ${reason}`
}

async function script(command: 'start' | 'stop' | 'purge' | 'add', ...stateDirs: string[]): Promise<string> {
  const { stdout } = await run('bash', [SCRIPT, command, ...stateDirs], { cwd: ROOT, timeout: 180_000 })
  return stdout
}

/** Starts a broker in a fresh state dir; purged (stopped, data deleted) on teardown. */
export async function ownBroker(t: TapTest): Promise<OwnBroker> {
  const stateDir = await makeTempDir(t, 'svc-own-broker-')
  const line = /^KAFKA_BROKERS=(.+)$/m.exec(await script('start', stateDir))
  t.teardown(() => script('purge', stateDir).then(() => undefined))
  if (!line) throw new Error('kafka-broker.sh start printed no KAFKA_BROKERS')
  const brokers = line[1]!
  return {
    brokers,
    stop: async () => void (await script('stop', stateDir)),
    start: async () => {
      const again = /^KAFKA_BROKERS=(.+)$/m.exec(await script('start', stateDir))
      if (again?.[1] !== brokers) throw new Error(`the broker came back on ${again?.[1]}, not ${brokers}`)
    },
    add: async (t2) => {
      const added = await makeTempDir(t2, 'svc-own-broker-added-')
      t2.teardown(() => script('purge', added).then(() => undefined))
      const all = /^KAFKA_BROKERS=(.+)$/m.exec(await script('add', stateDir, added))
      if (!all) throw new Error('kafka-broker.sh add printed no KAFKA_BROKERS')
      return all[1]!
    },
  }
}
