/**
 * `npm run bench`, part 4 (issue 32): free reads per second through one port (svc balance's Balancer) in front of 1,
 * 2 and 3 instances on one Kafka broker (SVC_CLUSTER=on: every instance a replica that answers every read), each
 * instance pinned to one core with taskset where it exists, the scaling ratio to one instance printed beside the p99.
 *
 * The route is GET /v1/market/BTC (a quote from the market state, answered from memory by any replica). The load generator (wrk or autocannon, as in
 * bench/serving.ts) and the balancer run unpinned in this process's reach, and the broker's JVM beside them: on a
 * machine with fewer cores than instances + 1 the figures say how far the cores go, not how far the design would.
 * Paid calls are not measured here: credits are not yet owned across instances (README "Several instances").
 *
 *   node --import tsx bench/cluster.ts [seconds per run, default 15]
 */
import { execFileSync, type ChildProcess } from 'node:child_process'
import { availableParallelism } from 'node:os'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import { Balancer } from '../serving/cluster/Balancer.ts'
import { spawnClusterInstance } from './clusterInstance.ts'
import { loadGenerator, measure } from './serving.ts'

const REPO = fileURLToPath(new URL('../', import.meta.url))
const print = (line: string) => process.stdout.write(line + '\n')
const fmt = (n: number) => Math.round(n).toLocaleString('en-US')

function hasTaskset(): boolean {
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

interface Instance {
  child: ChildProcess
  url: string
  dir: string
}

async function startInstance(name: string, core: number | null, brokers: string, prefix: string): Promise<Instance> {
  const dir = await mkdtemp(join(tmpdir(), `svc-cluster-bench-${name}-`))
  const started = spawnClusterInstance({
    name, dataDir: dir, brokers, prefix, core,
    // The bench reads as fast as it can: the per-IP limit would measure the limiter.
    env: { SVC_RATE_IP_BURST: '1000000', SVC_RATE_IP_PER_S: '1000000', SVC_ACCESS_LOG: 'off' },
  })
  const url = await started.url
  const deadline = Date.now() + 600_000
  while ((await fetch(`${url}/readyz`).then((r) => r.status, () => 0)) !== 200) {
    if (started.child.exitCode !== null) throw new Error(`instance ${name} exited:\n${started.out().slice(-2000)}`)
    if (Date.now() > deadline) throw new Error(`instance ${name} not ready within 10 minutes:\n${started.out().slice(-2000)}`)
    await sleep(500)
  }
  return { child: started.child, url, dir }
}

async function stopInstance(i: Instance): Promise<void> {
  if (i.child.exitCode === null && i.child.signalCode === null) {
    const exited = new Promise<void>((r) => i.child.once('exit', () => r()))
    i.child.kill('SIGTERM')
    await exited
  }
  await rm(i.dir, { recursive: true, force: true })
}

export async function benchCluster(opts: { durationSec?: number; connections?: number; instances?: number; print?: (line: string) => void } = {}): Promise<void> {
  const out = opts.print ?? print
  const durationSec = opts.durationSec ?? 15
  const connections = opts.connections ?? 64
  const most = opts.instances ?? 3
  const cores = availableParallelism()
  const pin = hasTaskset()
  const generator = loadGenerator()
  let brokerDir: string | null = null
  let brokers = process.env.KAFKA_BROKERS ?? ''
  if (!brokers) {
    brokerDir = await mkdtemp(join(tmpdir(), 'svc-kafka-cluster-bench-'))
    execFileSync('bash', [join(REPO, 'scripts/kafka-broker.sh'), 'fetch'], { stdio: 'ignore' })
    const started = execFileSync('bash', [join(REPO, 'scripts/kafka-broker.sh'), 'start', brokerDir], { encoding: 'utf8' })
    brokers = /KAFKA_BROKERS=(\S+)/.exec(started)![1]!
  }
  const prefix = `bench${Date.now().toString(36)}.`
  const instances: Instance[] = []
  try {
    out(`${cores} cores; ${pin ? 'each instance pinned to one core (taskset, round-robin over the cores)' : 'taskset not found: instances unpinned'}; ${generator}, ${connections} connections, ${durationSec} s per run; GET /v1/market/BTC through the balancer`)
    const rows: Array<{ n: number; reqPerSec: number; p99Ms: number; errors: number }> = []
    for (let n = 1; n <= most; n++) {
      instances.push(await startInstance(String.fromCharCode(96 + n), pin ? (n - 1) % cores : null, brokers, prefix))
      if (n === 1) {
        // The baseline of the same run: the one instance without the balancer in front (what the proxy hop costs).
        await measure(`${instances[0]!.url}/v1/market/BTC`, connections, 3, generator)
        const direct = await measure(`${instances[0]!.url}/v1/market/BTC`, connections, durationSec, generator)
        out(`1 instance, direct (no balancer)  ${fmt(direct.reqPerSec).padStart(8)} req/s  p99 ${direct.p99Ms.toFixed(1)} ms  non-2xx+errors ${direct.errors + direct.non2xx}`)
      }
      const balancer = await Balancer.start({
        port: 0,
        host: '127.0.0.1',
        upstreams: instances.map((i) => ({ host: new URL(i.url).hostname, port: Number(new URL(i.url).port) })),
      })
      try {
        await measure(`http://127.0.0.1:${balancer.port}/v1/market/BTC`, connections, 3, generator) // warm-up
        const r = await measure(`http://127.0.0.1:${balancer.port}/v1/market/BTC`, connections, durationSec, generator)
        rows.push({ n, reqPerSec: r.reqPerSec, p99Ms: r.p99Ms, errors: r.errors + r.non2xx })
        const spread = balancer.upstreams.map((u) => u.served).join('/')
        out(`${n} instance${n > 1 ? 's' : ' '}  ${fmt(r.reqPerSec).padStart(8)} req/s  p99 ${r.p99Ms.toFixed(1)} ms  non-2xx+errors ${r.errors + r.non2xx}  ratio to 1 instance ${(r.reqPerSec / rows[0]!.reqPerSec).toFixed(2)}  (connections per instance ${spread})`)
      } finally {
        await balancer.close()
      }
    }
    const goal = rows.find((r) => r.n === 3)
    if (goal) out(`free reads at 3 instances / 1 instance: ${(goal.reqPerSec / rows[0]!.reqPerSec).toFixed(2)} (goal >= 2 with a core per instance; this machine has ${cores})`)
  } finally {
    for (const i of instances) await stopInstance(i).catch(() => undefined)
    if (brokerDir) {
      execFileSync('bash', [join(REPO, 'scripts/kafka-broker.sh'), 'purge', brokerDir], { stdio: 'ignore' })
      await rm(brokerDir, { recursive: true, force: true })
    }
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await benchCluster({ durationSec: Number(process.argv[2] ?? 15) })
}
