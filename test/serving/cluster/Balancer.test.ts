/**
 * The balancer in front of instances (issue 32, point 4), over real TCP on 127.0.0.1: each instance is a real HTTP
 * server that answers /readyz as told and names itself on every other path; a WebSocket instance echoes.
 */
import t, { type Test } from 'tap'
import { createServer, request, type Server } from 'node:http'
import { connect } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { WebSocket, WebSocketServer } from 'ws'
import { Balancer, parseUpstream } from '../../../serving/cluster/Balancer.ts'
import { until } from '../../helpers/until.ts'

interface Instance {
  name: string
  port: number
  server: Server
  ready: number
  close(): Promise<void>
}

async function instance(t: Test, name: string): Promise<Instance> {
  const inst = { name, ready: 200 } as Instance
  const server = createServer((req, res) => {
    if (req.url === '/readyz') {
      res.writeHead(inst.ready).end()
      return
    }
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(Buffer.byteLength(name)) }).end(name)
  })
  new WebSocketServer({ server }).on('connection', (ws) => ws.on('message', (m) => ws.send(`${name}:${String(m)}`)))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  inst.server = server
  inst.port = (server.address() as { port: number }).port
  inst.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
  t.teardown(() => (server.listening ? inst.close() : undefined))
  return inst
}

/** One request on a connection of its own (no keep-alive): the balancer's unit of rotation. */
function get(port: number, path = '/who'): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = ''
      res.on('data', (d: Buffer) => (body += d.toString()))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

async function balancerFor(t: Test, instances: Instance[], probeEveryMs = 100): Promise<Balancer> {
  const balancer = await Balancer.start({ port: 0, upstreams: instances.map((i) => ({ host: '127.0.0.1', port: i.port })), probeEveryMs })
  t.teardown(() => balancer.close())
  return balancer
}

const tally = (bodies: string[]): Record<string, number> => bodies.reduce<Record<string, number>>((acc, b) => ({ ...acc, [b]: (acc[b] ?? 0) + 1 }), {})

t.test('each new connection goes to the next instance in service, in rotation', async (t) => {
  const instances = [await instance(t, 'a'), await instance(t, 'b'), await instance(t, 'c')]
  const balancer = await balancerFor(t, instances)
  const bodies: string[] = []
  for (let i = 0; i < 30; i++) bodies.push((await get(balancer.port)).body)
  t.same(tally(bodies), { a: 10, b: 10, c: 10 }, '30 connections, 10 per instance')
  t.same(bodies.slice(0, 3).sort(), ['a', 'b', 'c'], 'consecutive connections take consecutive instances')
  t.same(balancer.upstreams.map((u) => u.served), [10, 10, 10], 'the counts agree')
})

t.test('a keep-alive connection stays on one instance for its life', async (t) => {
  const instances = [await instance(t, 'a'), await instance(t, 'b')]
  const balancer = await balancerFor(t, instances)
  const socket = connect({ host: '127.0.0.1', port: balancer.port })
  t.teardown(() => socket.destroy())
  let received = ''
  socket.on('data', (d: Buffer) => (received += d.toString()))
  for (let i = 0; i < 4; i++) socket.write(`GET /who HTTP/1.1\r\nHost: x\r\n\r\n`)
  await until('four answers on one connection', () => (received.match(/HTTP\/1\.1 200/g) ?? []).length === 4, 5000)
  const names = [...received.matchAll(/\r\n\r\n([ab])/g)].map((m) => m[1])
  t.equal(names.length, 4, 'four bodies')
  t.equal(new Set(names).size, 1, `every answer from the same instance (${names.join('')})`)
})

t.test('an instance whose /readyz is not 200 leaves the rotation and comes back at the first 200', async (t) => {
  const instances = [await instance(t, 'a'), await instance(t, 'b')]
  const balancer = await balancerFor(t, instances)
  instances[1]!.ready = 503
  await until('b out of service', () => balancer.upstreams[1]!.inService === false, 5000)
  t.equal(balancer.upstreams[1]!.lastProbe, '503')
  const during: string[] = []
  for (let i = 0; i < 6; i++) during.push((await get(balancer.port)).body)
  t.same(tally(during), { a: 6 }, 'only a while b is warming up')
  instances[1]!.ready = 200
  await until('b back in service', () => balancer.upstreams[1]!.inService, 5000)
  const after: string[] = []
  for (let i = 0; i < 6; i++) after.push((await get(balancer.port)).body)
  t.same(tally(after), { a: 3, b: 3 }, 'both again')
})

t.test('a dead instance costs no client an error, even before the next probe', async (t) => {
  const instances = [await instance(t, 'a'), await instance(t, 'b'), await instance(t, 'c')]
  // Probes far apart: the connect failure itself must move the connection on.
  const balancer = await balancerFor(t, instances, 60_000)
  await instances[1]!.close()
  const results = await Promise.all(Array.from({ length: 12 }, () => get(balancer.port)))
  t.ok(results.every((r) => r.status === 200), 'every request answered 200')
  const counts = tally(results.map((r) => r.body))
  t.equal(counts.b, undefined, 'none reached b')
  t.equal((counts.a ?? 0) + (counts.c ?? 0), 12, `its share went on to the others (${JSON.stringify(counts)})`)
  t.equal(balancer.upstreams[1]!.inService, false, 'b marked out of service by the failed connect')
  t.equal(balancer.upstreams[1]!.served, 0)
})

t.test('no instance accepts: the client connection is reset, and it recovers when one is back', async (t) => {
  const a = await instance(t, 'a')
  const port = a.port
  const balancer = await balancerFor(t, [a], 100)
  await a.close()
  const err = await get(balancer.port).then(() => null, (e: NodeJS.ErrnoException) => e)
  t.match(err?.code, /ECONNRESET|EPIPE/, `reset (${err?.code})`)
  // The same port again: the instance restarted.
  const again = createServer((req, res) => res.writeHead(200).end(req.url === '/readyz' ? '' : 'a2'))
  await new Promise<void>((resolve) => again.listen(port, '127.0.0.1', () => resolve()))
  t.teardown(() => new Promise<void>((resolve) => again.close(() => resolve())))
  await until('back in service', () => balancer.upstreams[0]!.inService, 5000)
  t.same(await get(balancer.port), { status: 200, body: 'a2' })
})

t.test('a WebSocket passes through untouched, on one instance', async (t) => {
  const instances = [await instance(t, 'a'), await instance(t, 'b')]
  const balancer = await balancerFor(t, instances)
  const ws = new WebSocket(`ws://127.0.0.1:${balancer.port}/stream`)
  t.teardown(() => ws.terminate())
  const replies: string[] = []
  ws.on('message', (m) => replies.push(String(m)))
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve())
    ws.once('error', reject)
  })
  for (const m of ['1', '2', '3']) ws.send(m)
  await until('three echoes', () => replies.length === 3, 5000)
  const who = replies[0]!.split(':')[0]
  t.same(replies, ['1', '2', '3'].map((m) => `${who}:${m}`), 'in order, from one instance')
})

t.test('a balancer that closes ends its piped connections', async (t) => {
  const a = await instance(t, 'a')
  const balancer = await Balancer.start({ port: 0, upstreams: [{ host: '127.0.0.1', port: a.port }], probeEveryMs: 100 })
  const socket = connect({ host: '127.0.0.1', port: balancer.port })
  const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()))
  socket.on('error', () => undefined)
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
  await until('piped', () => balancer.upstreams[0]!.active === 1, 5000)
  await balancer.close()
  const closedInTime = await Promise.race([ended.then(() => true), sleep(5000).then(() => false)])
  t.ok(closedInTime, 'the client connection closed with the balancer')
})

t.test('upstream addresses: HOST:PORT, [IPv6]:PORT or a bare port', async (t) => {
  t.same(parseUpstream('8081'), { host: '127.0.0.1', port: 8081 })
  t.same(parseUpstream('10.0.0.2:9000'), { host: '10.0.0.2', port: 9000 })
  t.same(parseUpstream('svc-1.internal:80'), { host: 'svc-1.internal', port: 80 })
  t.same(parseUpstream('[::1]:8081'), { host: '::1', port: 8081 })
  for (const bad of ['', 'x', '0', '70000', 'a:b', 'http://h:1', '1.2.3.4:']) t.equal(parseUpstream(bad), null, `'${bad}' refused`)
})
