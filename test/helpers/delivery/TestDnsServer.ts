/**
 * A real DNS server on 127.0.0.1 (UDP, a port the kernel picks) for URL guard tests, built with dns-packet: it
 * answers A and AAAA questions from a table the test can change between two lookups (DNS rebinding), answers NXDOMAIN
 * for a name not in the table and an empty NOERROR (NODATA) for a name without records of the asked type, and keeps
 * every question it was asked so a test can prove that a client made no second lookup.
 *
 *   const dns = await TestDnsServer.start({ 'hooks.test': { A: ['127.0.0.1'] } })
 *   const guard = UrlGuard.create({ resolve: dns.resolver() })     // node:dns Resolver pointed at this server
 *   dns.set('hooks.test', { A: ['10.0.0.9'] })
 *   await dns.close()
 */
import { createSocket, type RemoteInfo, type Socket } from 'node:dgram'
import { promises as dnsPromises } from 'node:dns'
import * as dnsPacket from 'dns-packet'
import type { HostResolver, ResolvedAddress } from '../../../product/delivery/UrlGuard.ts'

export interface DnsRecords {
  A?: readonly string[]
  AAAA?: readonly string[]
}

export interface DnsQuestion {
  name: string
  type: string
}

/** RFC 1035 4.1.1 RCODE 3: the name does not exist. */
const NXDOMAIN = 3
const TTL_S = 1

export class TestDnsServer {
  private readonly table = new Map<string, DnsRecords>()
  /** Every question asked, in arrival order. */
  readonly questions: DnsQuestion[] = []

  private constructor(
    private readonly socket: Socket,
    readonly port: number,
  ) {
    socket.on('message', (msg, from) => this.answer(msg, from))
  }

  static async start(records: Record<string, DnsRecords> = {}): Promise<TestDnsServer> {
    const socket = createSocket('udp4')
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject)
      socket.bind(0, '127.0.0.1', () => {
        socket.off('error', reject)
        resolve()
      })
    })
    const server = new TestDnsServer(socket, socket.address().port)
    for (const [name, r] of Object.entries(records)) server.set(name, r)
    return server
  }

  /** `host:port` for Resolver.setServers. */
  get address(): string {
    return `127.0.0.1:${this.port}`
  }

  /** Replaces a name's records (a later answer sees the change: the TTL is 1 s and node:dns Resolver does not cache). */
  set(name: string, records: DnsRecords): void {
    this.table.set(name.toLowerCase().replace(/\.$/, ''), records)
  }

  delete(name: string): void {
    this.table.delete(name.toLowerCase().replace(/\.$/, ''))
  }

  /** How many questions named `name` so far. */
  asked(name: string): number {
    const n = name.toLowerCase().replace(/\.$/, '')
    return this.questions.filter((q) => q.name === n).length
  }

  /**
   * A UrlGuard resolver over node:dns's own Resolver pointed at this server: A and AAAA asked together, both
   * answers kept (A first). It throws the first error only when neither family has an answer, as getaddrinfo would.
   */
  resolver(): HostResolver {
    const r = new dnsPromises.Resolver({ timeout: 1000, tries: 1 })
    r.setServers([this.address])
    return async (host: string): Promise<ResolvedAddress[]> => {
      const [v4, v6] = await Promise.allSettled([r.resolve4(host), r.resolve6(host)])
      const out: ResolvedAddress[] = [
        ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 as const })) : []),
        ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 as const })) : []),
      ]
      if (out.length === 0) {
        if (v4.status === 'rejected') throw v4.reason
        if (v6.status === 'rejected') throw v6.reason
      }
      return out
    }
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.socket.close(() => resolve()))
  }

  private answer(msg: Buffer, from: RemoteInfo): void {
    let query: dnsPacket.DecodedPacket
    try {
      query = dnsPacket.decode(msg)
    } catch {
      return // not DNS: a real server drops it too
    }
    const questions = query.questions ?? []
    const answers: dnsPacket.Answer[] = []
    let rcode = 0
    for (const q of questions) {
      const name = q.name.toLowerCase().replace(/\.$/, '')
      this.questions.push({ name, type: q.type })
      const records = this.table.get(name)
      if (!records) {
        rcode = NXDOMAIN
        continue
      }
      if (q.type === 'A') for (const data of records.A ?? []) answers.push({ type: 'A', name: q.name, ttl: TTL_S, class: 'IN', data })
      if (q.type === 'AAAA') for (const data of records.AAAA ?? []) answers.push({ type: 'AAAA', name: q.name, ttl: TTL_S, class: 'IN', data })
    }
    const response = dnsPacket.encode({
      id: query.id ?? 0,
      type: 'response',
      flags: dnsPacket.AUTHORITATIVE_ANSWER | dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE | rcode,
      questions,
      answers,
    })
    this.socket.send(response, from.port, from.address)
  }
}
