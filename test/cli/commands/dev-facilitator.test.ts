/**
 * README "Try x402 per call locally" runs as printed (issue 33 item 4): the three commands of its recipe block and the
 * `pay.mts` of its snippet are read from README.md and run for real: `svc dev facilitator` (through npm, as printed),
 * `npm start` with the environment the facilitator printed, and the @x402/fetch script. The answer is paid (200,
 * rail x402, a successful PAYMENT-RESPONSE receipt) and the facilitator prints the settlement of that transaction.
 *
 * What the test changes, and only that: the facilitator's port (the README's 4020 becomes a free port everywhere in
 * the recipe, so parallel suites never collide) and the service's environment for a test run (PORT, a temp
 * SVC_DATA_DIR, and a short simulated history without the bootstrap release, so it is ready in seconds rather than
 * minutes; the paid route read, GET /v1/funding, needs market data only). SVC_URL tells the script where it runs.
 */
import t from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import { readFile, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { TEST_PAYER_ADDRESS, TEST_PAY_TO } from '../../../peers/testAccounts.ts'
import { DEV_FACILITATOR_PORT } from '../../../cli/commands/dev-facilitator.ts'
import { freePort, makeTempDir } from '../../helpers/tmp.ts'

const ROOT = new URL('../../../', import.meta.url).pathname
/** A short history without the bootstrap release: warm-up in seconds. The bound leaves room for a shared machine. */
const READY_WITHIN_MS = 300_000

interface Shell {
  child: ChildProcess
  out: () => string
  err: () => string
  exited: Promise<number | null>
}

/** A recipe line run by bash as its own process group (npm and the node below it stop together). */
function shell(t: { teardown(fn: () => unknown): void }, line: string, cwd: string, env: Record<string, string> = {}): Shell {
  const child = spawn('bash', ['-c', line], { cwd, env: { ...process.env, LOG_LEVEL: 'warn', LOG_FORMAT: 'json', ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  let out = ''
  let err = ''
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()))
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  const s = { child, out: () => out, err: () => err, exited }
  t.teardown(() => stop(s))
  return s
}

/** Whether any process of the group is still there (npm exits before the node it started has finished stopping). */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0)
    return true
  } catch {
    return false
  }
}

/** SIGTERM to the line's process group (as Ctrl-C would stop it), SIGKILL if any of it is still there a minute later. */
async function stop(s: Shell): Promise<void> {
  const pgid = s.child.pid!
  if (!groupAlive(pgid)) return
  process.kill(-pgid, 'SIGTERM')
  const end = Date.now() + 60_000
  while (groupAlive(pgid) && Date.now() < end) await sleep(100)
  if (groupAlive(pgid)) process.kill(-pgid, 'SIGKILL')
  await s.exited
}

async function until<T>(s: Shell, what: string, deadlineMs: number, probe: () => Promise<T | null> | T | null): Promise<T> {
  const end = Date.now() + deadlineMs
  for (;;) {
    const v = await probe()
    if (v !== null) return v
    if (s.child.exitCode !== null) throw new Error(`exited (${s.child.exitCode}) before ${what}:\n${s.out()}\n${s.err().slice(-3000)}`)
    if (Date.now() > end) throw new Error(`${what}: not within ${deadlineMs} ms\n${s.out()}\n${s.err().slice(-3000)}`)
    await sleep(250)
  }
}

/** The command of a recipe line: its text before the trailing `# comment`. */
const commandOf = (line: string) => line.replace(/\s+#\s.*$/, '').trim()

t.test('README: svc dev facilitator, the service pointed at it, and the @x402/fetch script pay per call for real', async (t) => {
  const readme = await readFile(join(ROOT, 'README.md'), 'utf8')
  const recipe = /<!-- readme-recipe: x402-local -->\n```sh\n([\s\S]*?)\n```/.exec(readme)
  const snippet = /<!-- readme-snippet: x402-pay -->\n```ts\n([\s\S]*?)\n```/.exec(readme)
  t.ok(recipe && snippet, 'README carries the recipe and the script')
  const port = await freePort()
  const lines = recipe![1]!.split('\n').map(commandOf).map((l) => l.replaceAll(String(DEV_FACILITATOR_PORT), String(port)))
  t.equal(lines.length, 3, 'three commands: facilitator, service, script')
  const [facilitatorLine, serviceLine, payLine] = lines as [string, string, string]
  t.match(facilitatorLine, /dev facilitator/)

  // 1. The facilitator, as printed; what it prints to start the service and the script is what README says.
  const facilitator = shell(t, facilitatorLine, ROOT)
  const printed = await until(facilitator, 'the facilitator printing its environment', 120_000, () => (/^PAYER_KEY=.*$/m.test(facilitator.out()) ? facilitator.out() : null))
  t.match(printed, `facilitator  http://127.0.0.1:${port}`)
  t.match(printed, `payer        ${TEST_PAYER_ADDRESS} (funded with 100 USDC, simulated)`)
  const printedLines = printed.split('\n')
  t.ok(printedLines.includes(serviceLine), `it prints README's service command: ${serviceLine}`)
  t.ok(printedLines.includes(payLine), `it prints README's script command: ${payLine}`)

  // 2. The service, as printed, on a test's port and data folder.
  const svcPort = await freePort()
  const dataDir = await makeTempDir(t, 'svc-dev-facilitator-')
  const service = shell(t, serviceLine, ROOT, {
    PORT: String(svcPort), SVC_DATA_DIR: dataDir, SVC_SIM_HISTORY_DAYS: '2', SVC_TRAIN_DAYS: '1', SVC_BOOTSTRAP_RELEASE: 'off', SVC_RECORD_INTERVAL_S: '0',
  })
  const base = `http://127.0.0.1:${svcPort}`
  await until(service, '/readyz 200', READY_WITHIN_MS, async () => {
    try {
      return (await fetch(`${base}/readyz`)).status === 200 ? true : null
    } catch {
      return null
    }
  })
  const challenge = await fetch(`${base}/v1/funding`)
  t.equal(challenge.status, 402, 'unpaid: the challenge')
  const accepts = (JSON.parse(Buffer.from(challenge.headers.get('payment-required')!, 'base64').toString('utf8')) as { accepts: Array<{ payTo: string; amount: string }> }).accepts
  t.equal(accepts[0]!.payTo, TEST_PAY_TO, 'the service asks for payment to the printed recipient')

  // 3. The script, as printed, in a folder beside node_modules (as README says: in the checkout).
  const dir = await makeTempDir(t, 'svc-readme-x402-')
  await symlink(join(ROOT, 'node_modules'), join(dir, 'node_modules'))
  await writeFile(join(dir, 'pay.mts'), snippet![1]!)
  const pay = shell(t, payLine, dir, { SVC_URL: base })
  const code = await Promise.race([pay.exited, sleep(120_000, 'timeout', { ref: false })])
  t.equal(code, 0, `the script ran: ${pay.err().slice(-2000)}`)
  const [statusLine, receiptLine] = pay.out().trim().split('\n')
  const [status, pricingJson] = [statusLine!.slice(0, statusLine!.indexOf(' ')), statusLine!.slice(statusLine!.indexOf(' ') + 1)]
  t.equal(status, '200', 'a paid answer')
  const pricing = JSON.parse(pricingJson) as { key: string; rail: string; payment_id: string; usd: number }
  t.match(pricing, { key: 'perp.funding', rail: 'x402' })
  t.ok(pricing.payment_id, 'with its payment id')
  const receipt = JSON.parse(receiptLine!) as { success: boolean; payer: string; transaction: string; network: string }
  t.match(receipt, { success: true, payer: TEST_PAYER_ADDRESS, network: 'eip155:8453' })
  t.match(receipt.transaction, /^0x[0-9a-f]{64}$/)

  // The facilitator settled exactly that transaction, for the price asked, to the printed recipient.
  const settled = await until(facilitator, 'the settlement line', 10_000, () => /^settled .*$/m.exec(facilitator.out())?.[0] ?? null)
  t.match(settled, `from ${TEST_PAYER_ADDRESS} to ${TEST_PAY_TO}: tx ${receipt.transaction} (fake)`)
  t.match(settled, `settled ${Number(accepts[0]!.amount) / 1e6} USDC`)

  // Stopped here, before the teardown removes the data folder the service writes into.
  await Promise.all([stop(service), stop(facilitator)])
})

t.test('svc dev facilitator: bad flags are usage errors (exit 2) naming the flag; --help lists it', async (t) => {
  const svc = join(ROOT, 'bin/svc.js')
  const run = (args: string[]) =>
    new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
      const child = spawn(process.execPath, [svc, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
      let out = ''
      let err = ''
      child.stdout!.on('data', (d: Buffer) => (out += d.toString()))
      child.stderr!.on('data', (d: Buffer) => (err += d.toString()))
      child.on('exit', (code) => resolve({ code, out, err }))
    })
  for (const [args, names] of [
    [['--key', '0x12'], '--key'],
    [['--pay-to', 'nobody'], '--pay-to'],
    [['--port', '70000'], '--port'],
    [['--fund', '0'], '--fund'],
  ] as const) {
    const r = await run(['dev', 'facilitator', ...args])
    t.equal(r.code, 2, `${args.join(' ')}: exit 2`)
    t.match(r.err, names, 'names the flag')
  }
  const help = await run(['--help'])
  t.match(help.out, /dev facilitator +Run a local x402 facilitator/)
})
