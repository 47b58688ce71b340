import { Server } from './serving/Server.ts'
import { RateLimiter } from './serving/RateLimiter.ts'
import { memoryServices, RESOLVED_ID } from './test/helpers/serving/memoryServices.ts'
const { parts } = memoryServices(Date.now())
const server = await Server.start({ port: 0, config: { payTo: null }, services: { ...parts, rateLimiter: new RateLimiter({ ip: { burst: 1e9, refillPerSec: 1e9 }, payer: { burst: 1e9, refillPerSec: 1e9 } }) } })
const s = server as any
const dispatcher = s.mcp.dispatcher
const mcp = s.mcp
const sink = () => { let done!: () => void; const p = new Promise<void>((r) => (done = r)); return { p, w: { send: () => { done(); return true } } } }
const base = { ip: '127.0.0.1', bodyTooLarge: false }
const restReq = () => ({ ...base, method: 'GET', path: `/v1/decisions/${RESOLVED_ID}`, query: '', headers: {}, body: null })
const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'svc_get_decision', arguments: { decision_id: RESOLVED_ID } } }))
const mcpReq = () => ({ ...base, method: 'POST', path: '/mcp', query: '', headers: { 'content-type': 'application/json' }, body })
async function run(name: string, make: () => any, handle: (r: any, w: any) => any, n: number) {
  for (let i = 0; i < 2000; i++) { const s = sink(); handle(make(), s.w); await s.p }
  const t0 = process.cpuUsage(); const w0 = performance.now()
  for (let i = 0; i < n; i++) { const s = sink(); handle(make(), s.w); await s.p }
  const c = process.cpuUsage(t0); const w = performance.now() - w0
  console.log(name, ((c.user + c.system) / n).toFixed(1), 'µs cpu/req', (w * 1000 / n).toFixed(1), 'µs wall/req')
}
for (let k = 0; k < 2; k++) {
  await run('rest', restReq, (r, w) => dispatcher.handle(r, w), 20000)
  await run('mcp ', mcpReq, (r, w) => mcp.handle(r, w), 20000)
}
await server.close()
process.exit(0)
