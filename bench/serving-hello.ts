/**
 * Baseline for serving benchmarks: a bare uWebSockets.js hello-world JSON server with no routing, validation,
 * rate limiting or envelope. A serving bench prints its numbers beside this one, measured in the same run.
 */
import uWS from 'uWebSockets.js'

const BODY = Buffer.from(JSON.stringify({ data: { status: 'ok' } }))

export interface HelloServer {
  port: number
  close(): void
}

export function startHelloServer(port = 0, host = '127.0.0.1'): Promise<HelloServer> {
  const app = uWS.App().get('/*', (res) => {
    res.writeStatus('200 OK').writeHeader('content-type', 'application/json').end(BODY)
  })
  return listenBenchApp(app, host, port)
}

/** Binds a bench's uWS app (port 0 picks a free one) and hands back its port and a close. */
export function listenBenchApp(app: uWS.TemplatedApp, host: string, port: number): Promise<HelloServer> {
  return new Promise((resolve, reject) => {
    app.listen(host, port, (socket) => {
      if (!socket) {
        reject(new Error(`cannot listen on ${host}:${port}`))
        return
      }
      resolve({
        port: uWS.us_socket_local_port(socket as unknown as uWS.us_socket),
        close: () => uWS.us_listen_socket_close(socket),
      })
    })
  })
}
