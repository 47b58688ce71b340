/**
 * `svc balance`: one port in front of several service instances (serving/cluster/Balancer.ts), until SIGINT or
 * SIGTERM. README "Several instances" shows it with instances on one Kafka broker.
 */
import { parseArgs } from 'node:util'
import { UsageError, numberFlag, type Command } from '../Command.ts'
import { Balancer, parseUpstream, type Upstream } from '../../serving/cluster/Balancer.ts'

const usage = `Usage: svc balance --upstream HOST:PORT,HOST:PORT[,...] [--port N] [--host H] [--probe-ms MS]

Accepts TCP connections on one port and hands each to the next service instance in rotation whose GET /readyz
answers 200 (probed every --probe-ms). Below HTTP: requests, keep-alive, WebSocket and SSE streams and MCP pass
through untouched; a connection stays on one instance for its life. An instance that refuses a connection is
skipped for that connection and leaves the rotation until its /readyz answers 200 again.

Options:
  --upstream LIST    the instances, comma-separated: HOST:PORT or PORT (127.0.0.1)
  --port N           port, default 8080 (0: a free port)
  --host H           interface, default 127.0.0.1
  --probe-ms MS      how often each instance's /readyz is probed, default 1000
`

export const command: Command = {
  name: 'balance',
  summary: 'One port in front of several service instances (TCP, round-robin over those whose /readyz is 200)',
  usage,
  async run(argv) {
    const { values } = parseArgs({
      args: argv,
      allowPositionals: false,
      options: {
        upstream: { type: 'string' },
        port: { type: 'string' },
        host: { type: 'string' },
        'probe-ms': { type: 'string' },
      },
    })
    if (values.upstream === undefined) throw new UsageError('--upstream is required: the instances, e.g. 8081,8082,8083')
    const upstreams: Upstream[] = []
    for (const part of values.upstream.split(',')) {
      const upstream = parseUpstream(part)
      if (!upstream) throw new UsageError(`--upstream: '${part}' is not HOST:PORT or PORT`)
      upstreams.push(upstream)
    }
    const port = numberFlag('port', values.port, 8080, (n) => Number.isInteger(n) && n >= 0 && n <= 65535, 'an integer port 0..65535')
    const probeEveryMs = numberFlag('probe-ms', values['probe-ms'], 1000, (n) => Number.isInteger(n) && n >= 50 && n <= 60_000, 'an integer from 50 to 60000')

    let balancer: Balancer
    try {
      balancer = await Balancer.start({ port, upstreams, probeEveryMs, ...(values.host === undefined ? {} : { host: values.host }) })
    } catch (err) {
      const code = (err as { code?: string }).code
      if (code !== 'EADDRINUSE' && code !== 'EADDRNOTAVAIL' && code !== 'EACCES') throw err
      process.stderr.write(`svc balance: cannot listen on ${values.host ?? '127.0.0.1'}:${port} (${code}); try --port 0\n`)
      return 1
    }
    const url = `http://${values.host ?? '127.0.0.1'}:${balancer.port}`
    process.stdout.write(
      [
        `svc balance: listening on ${url} for ${upstreams.length} instance(s)`,
        ...balancer.upstreams.map((u) => `  ${u.host}:${u.port}  ${u.inService ? 'in service' : `out of service (/readyz: ${u.lastProbe})`}`),
        `Try: curl ${url}/readyz`,
        '',
      ].join('\n'),
    )
    const signal = await new Promise<string>((resolve) => {
      process.once('SIGINT', () => resolve('SIGINT'))
      process.once('SIGTERM', () => resolve('SIGTERM'))
    })
    const served = balancer.upstreams.map((u) => `${u.host}:${u.port} ${u.served}`).join(', ')
    await balancer.close()
    process.stderr.write(`svc balance: ${signal}; closed (connections served: ${served})\n`)
    return 0
  },
}
