/**
 * `npm run bench`, part 4 (issue 32): free reads and paid calls per second through one port (svc balance's Balancer)
 * in front of 1, 2 and 3 instances on one Kafka broker (SVC_CLUSTER=on), each instance pinned to one core with taskset
 * where it exists, the scaling ratio to one instance printed beside the p99, and the one instance without the balancer
 * as the baseline of what the proxy hop costs.
 *
 * - Free reads: GET /v1/market/BTC (a quote from the market state, answered from memory by any replica).
 * - Paid calls: GET /v1/funding on the credits rail, PAYERS payers signed in (sign-in-with-x, viem keys) and granted
 *   credits through the operator grant route beforehand, each connection cycling through all of them, so every
 *   partition of the payers lease, and so every instance, has calls to answer; a call reaching a non-owner is
 *   forwarded to the payer's owner (PeerForwarder), as behind a real balancer. Each paid call is a hold, a debit and
 *   an answer receipt on the draws journal (one Kafka transaction at the owner). Load from autocannon (a worker
 *   thread): the payers' headers differ per request, which the wrk path of bench/serving.ts does not do.
 *
 * The load generator and the balancer run unpinned in this process's reach, and the broker's JVM beside them: on a
 * machine with fewer cores than instances + 1 the figures say how far the cores go, not how far the design would.
 *
 *   node --import tsx bench/cluster.ts [seconds per free-read run, default 15] [seconds per paid run, default 10]
 */
import { execFileSync, type ChildProcess } from 'node:child_process'
import { availableParallelism } from 'node:os'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import autocannon from 'autocannon'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { Balancer } from '../serving/cluster/Balancer.ts'
import { KafkaLog } from '../pipeline/log/KafkaLog.ts'
import { payerOwners, spawnClusterInstance } from './clusterInstance.ts'
import { freePort } from './freePort.ts'
import { loadGenerator, measure } from './serving.ts'
import { fetchChallenge, signChallenge } from '../peers/signIn.ts'

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
  stop: () => Promise<void>
  url: string
  dir: string
}

const OPS = `ops-${randomBytes(8).toString('hex')}`
/** Payers of the paid runs: enough that each of the draws journal's partitions (3) has many. */
const PAYERS = 60
/** Credits granted to each payer (the grant route's maximum): far more than a run spends. */
const GRANT = 100_000_000

async function startInstance(name: string, core: number | null, brokers: string, prefix: string, publicUrl: string): Promise<Instance> {
  const dir = await mkdtemp(join(tmpdir(), `svc-cluster-bench-${name}-`))
  const started = spawnClusterInstance({
    name, dataDir: dir, brokers, prefix, core,
    // The bench calls as fast as it can: the per-IP and per-payer limits would measure the limiter. A sign-in names the
    // balancer's URL, which every instance shares as its base URL.
    env: {
      SVC_RATE_IP_BURST: '1000000', SVC_RATE_IP_PER_S: '1000000', SVC_RATE_PAYER_BURST: '1000000', SVC_RATE_PAYER_PER_S: '1000000',
      SVC_ACCESS_LOG: 'off', SVC_OPS_TOKEN: OPS, SVC_BASE_URL: publicUrl,
    },
  })
  const url = await started.url
  const deadline = Date.now() + 600_000
  while ((await fetch(`${url}/readyz`).then((r) => r.status, () => 0)) !== 200) {
    if (started.child.exitCode !== null) throw new Error(`instance ${name} exited:\n${started.out().slice(-2000)}`)
    if (Date.now() > deadline) throw new Error(`instance ${name} not ready within 10 minutes:\n${started.out().slice(-2000)}`)
    await sleep(500)
  }
  return { child: started.child, stop: started.stop, url, dir }
}

async function stopInstance(i: Instance): Promise<void> {
  await i.stop()
  await rm(i.dir, { recursive: true, force: true })
}

interface Payer {
  address: string
  headers: Record<string, string>
}

/** PAYERS payers signed in at `url` (the proof names `publicUrl`, the base URL the instances share) and granted GRANT credits each. */
async function payersAt(url: string, publicUrl: string, n: number): Promise<Payer[]> {
  const payers: Payer[] = []
  for (let i = 0; i < n; i++) {
    const header = await signChallenge(await fetchChallenge(url), privateKeyToAccount(generatePrivateKey()), `${publicUrl}/v1/auth/session`)
    const res = await fetch(`${url}/v1/auth/session`, { method: 'POST', headers: { 'sign-in-with-x': header } })
    const body = (await res.json()) as { data: { token: string; address: string } }
    if (res.status !== 201) throw new Error(`sign-in refused: ${res.status} ${JSON.stringify(body)}`)
    const granted = await fetch(`${url}/v1/billing/grants`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-svc-ops': OPS },
      body: JSON.stringify({ action: 'grant', payer: body.data.address, credits: GRANT, ref: `bench-${i}` }),
    })
    if (granted.status !== 200) throw new Error(`grant refused: ${granted.status} ${await granted.text()}`)
    payers.push({ address: body.data.address, headers: { authorization: `Bearer ${body.data.token}`, 'x-svc-payer': body.data.address } })
  }
  return payers
}

/** Paid calls for `durationSec`, each connection cycling through every payer (autocannon in a worker thread). */
async function measurePaid(base: string, payers: Payer[], connections: number, durationSec: number) {
  const r = await autocannon({
    url: base, connections, duration: durationSec, pipelining: 1, workers: 1,
    requests: payers.map((p) => ({ method: 'GET' as const, path: '/v1/funding', headers: p.headers })),
  })
  return { reqPerSec: r.requests.average, p99Ms: r.latency.p99, errors: r.errors + r.timeouts + r.non2xx }
}

export async function benchCluster(opts: { durationSec?: number; paidSec?: number; connections?: number; instances?: number; print?: (line: string) => void } = {}): Promise<void> {
  const out = opts.print ?? print
  const durationSec = opts.durationSec ?? 15
  const paidSec = opts.paidSec ?? 10
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
  // One balancer port for every run: the instances name it as their base URL, which a sign-in's proof is signed for.
  const balancerPort = await freePort()
  const publicUrl = `http://127.0.0.1:${balancerPort}`
  const reader = await KafkaLog.connect({ brokers: brokers.split(','), clientId: 'svc-bench-cluster', topicPrefix: prefix })
  try {
    out(`${cores} cores; ${pin ? 'each instance pinned to one core (taskset, round-robin over the cores)' : 'taskset not found: instances unpinned'}; ${connections} connections; free reads GET /v1/market/BTC (${generator}, ${durationSec} s per run), paid calls GET /v1/funding on credits, ${PAYERS} payers (autocannon, ${paidSec} s per run)`)
    const rows: Array<{ n: number; reqPerSec: number; p99Ms: number; errors: number }> = []
    const paidRows: Array<{ n: number; reqPerSec: number; p99Ms: number; errors: number }> = []
    let payers: Payer[] = []
    let price = 0
    for (let n = 1; n <= most; n++) {
      instances.push(await startInstance(String.fromCharCode(96 + n), pin ? (n - 1) % cores : null, brokers, prefix, publicUrl))
      if (n === 1) {
        // The baseline of the same run: the one instance without the balancer in front (what the proxy hop costs).
        await measure(`${instances[0]!.url}/v1/market/BTC`, connections, 3, generator)
        const direct = await measure(`${instances[0]!.url}/v1/market/BTC`, connections, durationSec, generator)
        out(`free, 1 instance, direct (no balancer)  ${fmt(direct.reqPerSec).padStart(8)} req/s  p99 ${direct.p99Ms.toFixed(1)} ms  non-2xx+errors ${direct.errors + direct.non2xx}`)
        payers = await payersAt(instances[0]!.url, publicUrl, PAYERS)
        const probe = await fetch(`${instances[0]!.url}/v1/funding`, { headers: payers[0]!.headers })
        await probe.arrayBuffer()
        price = Number(probe.headers.get('x-svc-credits-charged') ?? 0)
        if (probe.status !== 200 || !(price > 0)) throw new Error(`a paid call was not answered on credits: ${probe.status}`)
        await measurePaid(instances[0]!.url, payers, connections, 3)
        const paid = await measurePaid(instances[0]!.url, payers, connections, paidSec)
        out(`paid, 1 instance, direct (no balancer)  ${fmt(paid.reqPerSec).padStart(8)} req/s  p99 ${paid.p99Ms.toFixed(1)} ms  non-2xx+errors ${paid.errors}  (${price} credits a call)`)
      } else {
        // The joining instance takes its share of the payers lease (sticky, balanced) before the paid run.
        const deadline = Date.now() + 120_000
        for (;;) {
          const owners = await payerOwners(reader, prefix)
          if (owners.every((o) => o !== null) && new Set(owners).size === Math.min(n, owners.length)) break
          if (Date.now() > deadline) throw new Error(`the payers lease not spread over ${n} instances: ${owners.join(', ')}`)
          await sleep(500)
        }
      }
      const balancer = await Balancer.start({
        port: balancerPort,
        host: '127.0.0.1',
        upstreams: instances.map((i) => ({ host: new URL(i.url).hostname, port: Number(new URL(i.url).port) })),
      })
      try {
        await measure(`http://127.0.0.1:${balancer.port}/v1/market/BTC`, connections, 3, generator) // warm-up
        const r = await measure(`http://127.0.0.1:${balancer.port}/v1/market/BTC`, connections, durationSec, generator)
        rows.push({ n, reqPerSec: r.reqPerSec, p99Ms: r.p99Ms, errors: r.errors + r.non2xx })
        const spread = balancer.upstreams.map((u) => u.served).join('/')
        out(`free, ${n} instance${n > 1 ? 's' : ' '}               ${fmt(r.reqPerSec).padStart(8)} req/s  p99 ${r.p99Ms.toFixed(1)} ms  non-2xx+errors ${r.errors + r.non2xx}  ratio to 1 instance ${(r.reqPerSec / rows[0]!.reqPerSec).toFixed(2)}  (connections per instance ${spread})`)
        await measurePaid(publicUrl, payers, connections, 3) // warm-up
        const before = balancer.upstreams.map((u) => u.served)
        const p = await measurePaid(publicUrl, payers, connections, paidSec)
        paidRows.push({ n, ...p })
        const paidSpread = balancer.upstreams.map((u, i) => u.served - before[i]!).join('/')
        out(`paid, ${n} instance${n > 1 ? 's' : ' '}               ${fmt(p.reqPerSec).padStart(8)} req/s  p99 ${p.p99Ms.toFixed(1)} ms  non-2xx+errors ${p.errors}  ratio to 1 instance ${(p.reqPerSec / paidRows[0]!.reqPerSec).toFixed(2)}  (connections per instance ${paidSpread})`)
      } finally {
        await balancer.close()
      }
    }
    const goal = rows.find((r) => r.n === 3)
    if (goal) out(`free reads at 3 instances / 1 instance: ${(goal.reqPerSec / rows[0]!.reqPerSec).toFixed(2)} (goal >= 2 with a core per instance; this machine has ${cores})`)
    const paidGoal = paidRows.find((r) => r.n === 3)
    if (paidGoal) out(`paid calls at 3 instances / 1 instance: ${(paidGoal.reqPerSec / paidRows[0]!.reqPerSec).toFixed(2)} (goal >= 1.5 with a core per instance; this machine has ${cores})`)
  } finally {
    await reader.close().catch(() => undefined)
    for (const i of instances) await stopInstance(i).catch(() => undefined)
    if (brokerDir) {
      execFileSync('bash', [join(REPO, 'scripts/kafka-broker.sh'), 'purge', brokerDir], { stdio: 'ignore' })
      await rm(brokerDir, { recursive: true, force: true })
    }
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await benchCluster({ durationSec: Number(process.argv[2] ?? 15), paidSec: Number(process.argv[3] ?? 10) })
}
