/**
 * The listen socket is exclusive (issue 14): a second server on a port in use fails at start with a typed one-line
 * error, in this process and from another one, instead of sharing the port and splitting its requests.
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { ListenError } from '../../../serving/http/ListenError.ts'
import { Server } from '../../../serving/Server.ts'
import { withServer } from '../../helpers/serving/server.ts'

const SERVER_MODULE = new URL('../../../serving/Server.ts', import.meta.url).pathname

t.test('a second server on a used port fails with PORT_IN_USE; the first keeps serving', async (t) => {
  const first = await withServer(t)
  const port = Number(new URL(first.url).port)
  await t.rejects(Server.start({ port, config: { payTo: null }, services: {} }), ListenError, 'in this process')
  await t.rejects(Server.start({ port, config: { payTo: null }, services: {} }), { code: 'PORT_IN_USE' })

  // Another process, as a second `svc start` would be.
  const script = `
    import { Server } from ${JSON.stringify(SERVER_MODULE)}
    try { await Server.start({ port: ${port}, config: { payTo: null }, services: {} }); process.stdout.write('listening') ; process.exit(0) }
    catch (err) { process.stdout.write(String(err.code)); process.exit(0) }`
  const out = await new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, NODE_ENV: 'test', LOG_LEVEL: 'silent' } })
    let text = ''
    child.stdout.on('data', (b: Buffer) => (text += b.toString()))
    child.on('error', reject)
    child.on('close', () => resolve(text))
  })
  t.equal(out, 'PORT_IN_USE', 'from another process')
  const res = await fetch(`${first.url}/healthz`)
  t.equal(res.status, 200, 'the first server still answers')
})
