/**
 * The URL guard (spec, Authentication 7): "URLs for hooks and push endpoints are safety-checked at registration and
 * again before each delivery; loopback, private, link-local and metadata addresses are refused with a typed error.
 * Push endpoints must be https." (Resources, POST /v1/hooks: "the url is checked against loopback, link-local and
 * private addresses at registration and before each delivery".)
 *
 *   const guard = UrlGuard.create()                       // tests: UrlGuard.create({ resolve, allow: ['127.0.0.1/32'] })
 *   const target = await guard.check(url, 'hook')         // throws 400 UNSAFE_URL, or names the address to connect to
 *   await client.post(target, body, headers)              // PinnedHttpClient connects to target.address, nothing else
 *
 * Why it is built this way:
 * - the refusal is "allow only unicast": ipaddr.js names every special range it knows and calls the rest 'unicast', so
 *   any range it learns later (or one this file never heard of) is refused by default instead of let through;
 * - IPv6 must also sit in 2000::/3, the only block IANA allocates as global unicast: ipaddr.js calls the unallocated
 *   rest (IPv4-compatible ::a.b.c.d among it) 'unicast', and we report it as 'reserved';
 * - a name is refused if ANY of its addresses is refused, not just the first: the client connects to the checked
 *   address, but a name that mixes a public and a private answer is an attack or a mistake either way;
 * - the WHATWG URL parser has already turned 2130706433, 0x7f.1 and 0177.0.0.1 into 127.0.0.1 before we look, so the
 *   address we classify is the one any client would connect to; no hand-written pattern sees the raw spelling;
 * - cloud metadata endpoints are listed by address and refused even inside the test allowlist: they hand out
 *   credentials, and no test needs them.
 */
import { promises as dnsPromises } from 'node:dns'
import ipaddr from 'ipaddr.js'
import { ServiceError } from '../../common/ServiceError.ts'
import { childLogger } from '../../common/logger.ts'
import { OptionsError, validateOptions } from '../../common/validation.ts'

const log = childLogger('delivery.url-guard')

export type UrlPurpose = 'hook' | 'push'

/** A resolved address as a resolver returns it. */
export interface ResolvedAddress {
  address: string
  family: 4 | 6
}

/** Resolves a host name to all its addresses; throws (ENOTFOUND, ENODATA, ...) when it has none. */
export type HostResolver = (host: string) => Promise<ResolvedAddress[]>

export interface UrlGuardOptions {
  /** Default: the system resolver, dns.promises.lookup(host, { all: true, verbatim: true }). */
  resolve?: HostResolver
  /**
   * CIDRs whose addresses pass although they are loopback or private (e.g. '127.0.0.1/32' for a local test
   * receiver). Empty by default: nothing is exempt. Cloud metadata addresses are never exempt.
   */
  allow?: readonly string[]
}

/** A URL that passed the guard, with the one address a delivery may connect to. */
export interface CheckedUrl {
  url: URL
  /** The hostname as given in the URL, without the brackets of an IPv6 literal (the Host header and SNI name). */
  host: string
  /** The checked address: the client connects here and nowhere else (no second lookup, so no DNS rebinding). */
  address: string
  family: 4 | 6
  port: number
}

/** Known cloud metadata endpoints (AWS/GCP/Azure IMDS, AWS IMDS over IPv6, AWS ECS task metadata, Alibaba Cloud). */
export const METADATA_ADDRESSES: readonly string[] = ['169.254.169.254', 'fd00:ec2::254', '169.254.170.2', '100.100.100.200']

/** The address class detail.address_class names: an ipaddr.js range name, or 'metadata'. */
export type AddressClass = string

/** The one range a delivery may reach. ipaddr.js's default name for an address in none of its special ranges. */
const UNICAST = 'unicast'
/** IANA's global unicast allocation: the only IPv6 block that holds ordinary Internet hosts. */
const GLOBAL_UNICAST_V6: [ipaddr.IPv6, number] = ipaddr.IPv6.parseCIDR('2000::/3')

const METADATA = new Set(METADATA_ADDRESSES.map((a) => ipaddr.parse(a).toString()))

const OPTIONS_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    resolve: {},
    allow: { type: 'array', items: { type: 'string', minLength: 1 }, maxItems: 64 },
  },
}

type Classification = { allowed: true } | { allowed: false; addressClass: AddressClass; embedded?: { address: string; addressClass: AddressClass } }

const DEFAULT_PORT: Record<string, number> = { 'http:': 80, 'https:': 443 }

/** The system resolver: getaddrinfo with every answer, in the order the system gives them. */
async function systemResolve(host: string): Promise<ResolvedAddress[]> {
  const answers = await dnsPromises.lookup(host, { all: true, verbatim: true })
  return answers.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }))
}

/**
 * The IPv4 address an IPv6 form carries, for the refusal's detail (the IPv6 form itself is refused whatever it
 * carries: a translator or tunnel would take the connection to that IPv4 host, past the check).
 */
function embeddedIPv4(v6: ipaddr.IPv6, range: string): ipaddr.IPv4 | null {
  const p = v6.parts
  const fromWords = (hi: number, lo: number) => new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff])
  switch (range) {
    case 'ipv4Mapped':
    case 'rfc6145': // ::ffff:0:a.b.c.d (SIIT)
    case 'rfc6052': // 64:ff9b::a.b.c.d (NAT64)
      return fromWords(p[6]!, p[7]!)
    case '6to4': // 2002:AABB:CCDD::/48
      return fromWords(p[1]!, p[2]!)
    case 'teredo': // the client's address, stored inverted in the last 32 bits
      return fromWords(~p[6]! & 0xffff, ~p[7]! & 0xffff)
    default:
      // IPv4-compatible ::a.b.c.d (deprecated, RFC 4291 2.5.5.1): ipaddr.js has no name for it.
      return p.slice(0, 6).every((w) => w === 0) && (p[6] !== 0 || p[7]! > 1) ? fromWords(p[6]!, p[7]!) : null
  }
}

export class UrlGuard {
  private constructor(
    private readonly resolve: HostResolver,
    private readonly allow: ReadonlyArray<[ipaddr.IPv4 | ipaddr.IPv6, number]>,
  ) {}

  static create(options: UrlGuardOptions = {}): UrlGuard {
    const o = validateOptions<UrlGuardOptions>('UrlGuard options', OPTIONS_SCHEMA, { ...options })
    if (o.resolve !== undefined && typeof o.resolve !== 'function') throw OptionsError.at('UrlGuard options', '/resolve', 'must be a function')
    const allow = (o.allow ?? []).map((cidr, i) => {
      if (!ipaddr.isValidCIDR(cidr)) throw OptionsError.at('UrlGuard options', `/allow/${i}`, `'${cidr}' is not a CIDR (e.g. 127.0.0.1/32)`)
      return ipaddr.parseCIDR(cidr)
    })
    if (allow.length > 0) log.warn({ allow: o.allow }, 'URL guard allowlist is on: these ranges pass although they are not public')
    return new UrlGuard(o.resolve ?? systemResolve, allow)
  }

  /**
   * Spec (Authentication 7): refuses what a hook or push delivery must never reach, else names the address to connect
   * to. Throws ServiceError UNSAFE_URL (reasons URL_SCHEME_REFUSED, URL_CREDENTIALS_REFUSED, URL_ADDRESS_REFUSED,
   * URL_HOST_UNRESOLVABLE), or VALIDATION when the string is not an absolute URL at all.
   */
  async check(rawUrl: string, purpose: UrlPurpose): Promise<CheckedUrl> {
    let url: URL
    try {
      url = new URL(rawUrl)
    } catch {
      throw new ServiceError('VALIDATION', { message: 'The URL is not an absolute URL.', detail: { reason: 'REQUEST_VALIDATION_FAILED', purpose } })
    }
    const scheme = url.protocol.slice(0, -1)
    const schemes = purpose === 'push' ? ['https'] : ['http', 'https']
    if (!schemes.includes(scheme)) {
      throw new ServiceError('UNSAFE_URL', {
        message: purpose === 'push' ? `Push endpoints must be https, not ${scheme}.` : `Hook URLs must be http or https, not ${scheme}.`,
        detail: { reason: 'URL_SCHEME_REFUSED', scheme, purpose, allowed_schemes: schemes },
      })
    }
    if (url.username !== '' || url.password !== '') {
      // Never echo them: the user name and password are the secret being refused.
      throw new ServiceError('UNSAFE_URL', { message: 'The URL carries a user name or password.', detail: { reason: 'URL_CREDENTIALS_REFUSED', purpose } })
    }
    const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
    const port = url.port === '' ? DEFAULT_PORT[url.protocol]! : Number(url.port)

    // An IP literal is the address (the URL parser already normalized its spelling); a name goes to the resolver.
    const literal = ipaddr.IPv4.isValidFourPartDecimal(host) || (url.hostname.startsWith('[') && ipaddr.IPv6.isValid(host))
    const addresses = literal ? [{ address: host, family: host.includes(':') ? 6 : 4 } as ResolvedAddress] : await this.resolveHost(host, purpose)

    let first: CheckedUrl | null = null
    for (const a of addresses) {
      if (!ipaddr.isValid(a.address)) {
        throw new ServiceError('UNSAFE_URL', {
          message: `The host ${host} resolved to something that is not an address.`,
          detail: { reason: 'URL_HOST_UNRESOLVABLE', host, purpose },
        })
      }
      const parsed = ipaddr.parse(a.address)
      const verdict = this.classify(parsed)
      if (!verdict.allowed) {
        const address = parsed.toString()
        const embedded = verdict.embedded ? ` (it embeds ${verdict.embedded.address}, ${verdict.embedded.addressClass})` : ''
        log.debug({ host, address, address_class: verdict.addressClass, purpose }, 'url refused')
        throw new ServiceError('UNSAFE_URL', {
          message: literal
            ? `The URL's address ${address} is refused: ${verdict.addressClass}${embedded}.`
            : `The host ${host} resolves to ${address}, which is refused: ${verdict.addressClass}${embedded}.`,
          detail: {
            reason: 'URL_ADDRESS_REFUSED',
            address,
            address_class: verdict.addressClass,
            ...(verdict.embedded ? { embedded_address: verdict.embedded.address, embedded_class: verdict.embedded.addressClass } : {}),
            host,
            purpose,
          },
        })
      }
      first ??= { url, host, address: parsed.toString(), family: parsed.kind() === 'ipv6' ? 6 : 4, port }
    }
    if (first === null) {
      throw new ServiceError('UNSAFE_URL', { message: `The host ${host} resolved to no address.`, detail: { reason: 'URL_HOST_UNRESOLVABLE', host, purpose } })
    }
    return first
  }

  /** Nothing to release (the system resolver holds no handle); here so owners close every part the same way. */
  async close(): Promise<void> {}

  private async resolveHost(host: string, purpose: UrlPurpose): Promise<ResolvedAddress[]> {
    try {
      return await this.resolve(host)
    } catch (err) {
      const dnsCode = (err as { code?: unknown }).code
      throw new ServiceError('UNSAFE_URL', {
        message: `The host ${host} did not resolve.`,
        detail: { reason: 'URL_HOST_UNRESOLVABLE', host, purpose, ...(typeof dnsCode === 'string' ? { dns_code: dnsCode } : {}) },
      })
    }
  }

  /** Metadata first (never exempt), then the allowlist, then "unicast or refused". */
  private classify(addr: ipaddr.IPv4 | ipaddr.IPv6): Classification {
    if (METADATA.has(addr.toString())) return { allowed: false, addressClass: 'metadata' }
    if (this.allow.some(([net, bits]) => net.kind() === addr.kind() && addr.match(net, bits))) return { allowed: true }
    const range: string = addr.range()
    if (addr.kind() === 'ipv4') return range === UNICAST ? { allowed: true } : { allowed: false, addressClass: range }
    const v6 = addr as ipaddr.IPv6
    if (range === UNICAST && v6.match(GLOBAL_UNICAST_V6)) return { allowed: true }
    const addressClass = range === UNICAST ? 'reserved' : range
    const inner = embeddedIPv4(v6, range)
    if (inner === null) return { allowed: false, addressClass }
    const innerVerdict = this.classifyEmbedded(inner)
    return { allowed: false, addressClass, embedded: { address: inner.toString(), addressClass: innerVerdict } }
  }

  /** The class of an embedded IPv4 address, for the message only (the IPv6 form is refused regardless). */
  private classifyEmbedded(v4: ipaddr.IPv4): AddressClass {
    return METADATA.has(v4.toString()) ? 'metadata' : v4.range()
  }
}
