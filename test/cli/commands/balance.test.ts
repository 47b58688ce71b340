/**
 * `svc balance` as a person runs it (issue 32, point 4): it prints where it listens and each instance's state, passes
 * requests to the instances in service, and stops on SIGTERM saying how many connections each served. Bad flags are
 * usage errors (exit 2), a taken port exit 1 with a hint.
 */
import t from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import { createServer, type Server } from 'node:http'
import { until } from '../../helpers/until.ts'
import { freePort } from '../../helpers/tmp.ts'

const SVC = new URL('../../../bin/svc.js', import.meta.url).pathname

interface Run {
  child: ChildProcess
  out: () => string
  err: () => string
  exited: Promise<number | null>
}

function svc(t: { teardown(fn: () => unknown): void }, args: string[]): Run {
  const child = spawn(process.execPath, [SVC, ...args], { env: { ...process.env, LOG_LEVEL: 'warn', LOG_FORMAT: 'json' }, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()))
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL')
  })
  return { child, out: () => out, err: () => err, exited }
}

async function instance(t: { teardown(fn: () => unknown): void }, name: string, ready: number): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => res.writeHead(req.url === '/readyz' ? ready : 200).end(req.url === '/readyz' ? '' : name))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return { server, port: (server.address() as { port: number }).port }
}

t.test('svc balance: listens, names each instance with its state, balances, and stops on SIGTERM', async (t) => {
  const a = await instance(t, 'a', 200)
  const b = await instance(t, 'b', 503)
  const port = await freePort()
  const run = svc(t, ['balance', '--port', String(port), '--upstream', `${a.port},127.0.0.1:${b.port}`, '--probe-ms', '200'])
  await until('the listening line', () => run.out().includes('Try: curl'), 60_000)
  t.match(run.out(), `svc balance: listening on http://127.0.0.1:${port} for 2 instance(s)`)
  t.match(run.out(), `127.0.0.1:${a.port}  in service`)
  t.match(run.out(), `127.0.0.1:${b.port}  out of service (/readyz: 503)`, 'a warming-up instance is named out of service')
  const bodies: string[] = []
  for (let i = 0; i < 4; i++) bodies.push(await fetch(`http://127.0.0.1:${port}/who`, { headers: { connection: 'close' } }).then((r) => r.text()))
  t.same(bodies, ['a', 'a', 'a', 'a'], 'only the instance in service answers')
  run.child.kill('SIGTERM')
  t.equal(await run.exited, 0, 'exit 0 on SIGTERM')
  t.match(run.err(), new RegExp(`svc balance: SIGTERM; closed \\(connections served: 127\\.0\\.0\\.1:${a.port} 4, 127\\.0\\.0\\.1:${b.port} 0\\)`))
})

t.test('svc balance: usage errors exit 2, a taken port exits 1 with a hint', async (t) => {
  const none = svc(t, ['balance'])
  t.equal(await none.exited, 2)
  t.match(none.err(), /--upstream is required/)
  const bad = svc(t, ['balance', '--upstream', '8081,nope:x'])
  t.equal(await bad.exited, 2)
  t.match(bad.err(), /--upstream: 'nope:x' is not HOST:PORT or PORT/)
  const a = await instance(t, 'a', 200)
  const taken = svc(t, ['balance', '--port', String(a.port), '--upstream', String(a.port)])
  t.equal(await taken.exited, 1)
  t.match(taken.err(), new RegExp(`cannot listen on 127\\.0\\.0\\.1:${a.port} \\(EADDRINUSE\\); try --port 0`))
})
