/**
 * The answer key's signatures made on a worker thread. A secp256k1 signature in JavaScript (viem's noble curves)
 * costs about a millisecond here, as much as the rest of a paid call, and the service answers on one thread: off that
 * thread it costs the paid path a message round trip instead (bench/answers.ts, README Measured). The worker loads
 * only viem (plain JavaScript), so it needs no TypeScript loader.
 */
import { Worker } from 'node:worker_threads'
import type { Hex } from 'viem'

const WORKER_SOURCE = (viemAccounts: string) => `
const { parentPort, workerData } = require('node:worker_threads')
import(${JSON.stringify(viemAccounts)}).then(({ privateKeyToAccount }) => {
  const account = privateKeyToAccount(workerData.privateKey)
  parentPort.on('message', ({ id, text }) => {
    account.signMessage({ message: text }).then(
      (signature) => parentPort.postMessage({ id, signature }),
      (err) => parentPort.postMessage({ id, error: String(err) }),
    )
  })
})
`

export class SigningWorker {
  private nextId = 0
  private readonly pending = new Map<number, { resolve: (s: Hex) => void; reject: (e: Error) => void }>()
  private failure: Error | null = null
  private closed = false

  private constructor(private readonly worker: Worker) {
    worker.on('message', (m: { id: number; signature?: Hex; error?: string }) => {
      const p = this.pending.get(m.id)
      if (!p) return
      this.pending.delete(m.id)
      if (m.signature) p.resolve(m.signature)
      else p.reject(new Error(`answer signing failed: ${m.error}`))
    })
    const fail = (err: Error) => {
      this.failure = err
      for (const p of this.pending.values()) p.reject(err)
      this.pending.clear()
    }
    worker.on('error', (err) => fail(err instanceof Error ? err : new Error(String(err))))
    worker.on('exit', (code) => fail(new Error(`the answer signing worker exited (${code})`)))
  }

  static start(privateKey: Hex): SigningWorker {
    const source = WORKER_SOURCE(import.meta.resolve('viem/accounts'))
    const worker = new Worker(source, { eval: true, workerData: { privateKey } })
    // Never what keeps a process alive (a start that fails after opening the keyring leaves nothing running).
    worker.unref()
    return new SigningWorker(worker)
  }

  /** EIP-191 personal_sign of text with the worker's key. */
  signMessage(text: string): Promise<Hex> {
    if (this.closed) return Promise.reject(new Error('the answer signing worker is closed'))
    if (this.failure) return Promise.reject(this.failure)
    const id = ++this.nextId
    return new Promise<Hex>((resolve, reject) => {
      this.pending.set(id, { resolve, reject })
      this.worker.postMessage({ id, text })
    })
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await this.worker.terminate()
  }
}
