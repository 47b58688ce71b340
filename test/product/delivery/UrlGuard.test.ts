/**
 * The URL guard over a real DNS server on 127.0.0.1 (TestDnsServer, asked through node:dns's Resolver) and real
 * local receivers: no resolver is stubbed and nothing is mocked.
 *
 * Spec, Authentication 7: "URLs for hooks and push endpoints are safety-checked at registration and again before each
 * delivery; loopback, private, link-local and metadata addresses are refused with a typed error. Push endpoints must
 * be https." Every refused row is refused twice: by check() as registration calls it, and by the delivery path (a
 * second guard re-checks, then the client would post), which must never reach the client.
 *
 * The address classes are ipaddr.js 2.5.0's range names (node_modules/ipaddr.js/lib/ipaddr.js, SpecialRanges);
 * the alternative IPv4 spellings are the WHATWG URL host parser's (URL Standard, "IPv4 parser": decimal, octal and
 * hex parts, and fewer than four parts).
 */
import t, { type Test } from 'tap'
import { createServer, type IncomingMessage } from 'node:http'
import ipaddr from 'ipaddr.js'
import { ServiceError } from '../../../common/ServiceError.ts'
import { OptionsError } from '../../../common/validation.ts'
import { PinnedHttpClient } from '../../../product/delivery/PinnedHttpClient.ts'
import { METADATA_ADDRESSES, UrlGuard, type UrlPurpose } from '../../../product/delivery/UrlGuard.ts'
import { TestDnsServer } from '../../helpers/delivery/TestDnsServer.ts'

const PUBLIC_V4 = '93.184.216.34'
const PUBLIC_V6 = '2606:2800:220:1:248:1893:25c8:1946'

const dns = await TestDnsServer.start({
  'private.test': { A: ['10.0.0.5'] },
  'mixed.test': { A: [PUBLIC_V4, '10.0.0.6'] },
  'mixed6.test': { A: [PUBLIC_V4], AAAA: ['fd12::6'] },
  'public.test': { A: [PUBLIC_V4], AAAA: [PUBLIC_V6] },
  'public6.test': { AAAA: [PUBLIC_V6] },
  'metadata.test': { A: ['169.254.169.254'] },
  'local.test': { A: ['127.0.0.1'] },
  'nodata.test': {},
})
t.teardown(() => dns.close())

/** What a refusal must carry: the reason, and for an address refusal the address and its class. */
interface Refusal {
  url: string
  purpose?: UrlPurpose
  reason: 'URL_ADDRESS_REFUSED' | 'URL_SCHEME_REFUSED' | 'URL_CREDENTIALS_REFUSED' | 'URL_HOST_UNRESOLVABLE'
  address?: string
  address_class?: string
  embedded_class?: string
}

const REFUSED: Refusal[] = [
  // Loopback in every spelling the URL parser folds into 127.0.0.1.
  { url: 'http://127.0.0.1/', reason: 'URL_ADDRESS_REFUSED', address: '127.0.0.1', address_class: 'loopback' },
  { url: 'http://127.1/', reason: 'URL_ADDRESS_REFUSED', address: '127.0.0.1', address_class: 'loopback' },
  { url: 'http://2130706433/', reason: 'URL_ADDRESS_REFUSED', address: '127.0.0.1', address_class: 'loopback' },
  { url: 'http://0x7f000001/', reason: 'URL_ADDRESS_REFUSED', address: '127.0.0.1', address_class: 'loopback' },
  { url: 'http://0x7f.1/', reason: 'URL_ADDRESS_REFUSED', address: '127.0.0.1', address_class: 'loopback' },
  { url: 'http://0177.0.0.1/', reason: 'URL_ADDRESS_REFUSED', address: '127.0.0.1', address_class: 'loopback' },
  { url: 'http://017700000001/', reason: 'URL_ADDRESS_REFUSED', address: '127.0.0.1', address_class: 'loopback' },
  { url: 'https://127.0.0.1:8443/push', purpose: 'push', reason: 'URL_ADDRESS_REFUSED', address: '127.0.0.1', address_class: 'loopback' },
  { url: 'http://[::1]/', reason: 'URL_ADDRESS_REFUSED', address: '::1', address_class: 'loopback' },
  // IPv4 inside IPv6: refused as the IPv6 form, with the embedded address named.
  { url: 'http://[::ffff:127.0.0.1]/', reason: 'URL_ADDRESS_REFUSED', address: '::ffff:7f00:1', address_class: 'ipv4Mapped', embedded_class: 'loopback' },
  { url: 'http://[::ffff:7f00:1]/', reason: 'URL_ADDRESS_REFUSED', address: '::ffff:7f00:1', address_class: 'ipv4Mapped', embedded_class: 'loopback' },
  { url: 'http://[::ffff:169.254.169.254]/', reason: 'URL_ADDRESS_REFUSED', address: '::ffff:a9fe:a9fe', address_class: 'ipv4Mapped', embedded_class: 'metadata' },
  { url: 'http://[::ffff:0:a00:1]/', reason: 'URL_ADDRESS_REFUSED', address: '::ffff:0:a00:1', address_class: 'rfc6145', embedded_class: 'private' },
  { url: 'http://[64:ff9b::a00:1]/', reason: 'URL_ADDRESS_REFUSED', address: '64:ff9b::a00:1', address_class: 'rfc6052', embedded_class: 'private' },
  { url: 'http://[2002:7f00:1::1]/', reason: 'URL_ADDRESS_REFUSED', address: '2002:7f00:1::1', address_class: '6to4', embedded_class: 'loopback' },
  { url: 'http://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/', reason: 'URL_ADDRESS_REFUSED', address_class: 'teredo', embedded_class: 'private' },
  // IPv4-compatible ::a.b.c.d: ipaddr.js calls it unicast, but it is outside 2000::/3.
  { url: 'http://[::7f00:1]/', reason: 'URL_ADDRESS_REFUSED', address: '::7f00:1', address_class: 'reserved', embedded_class: 'loopback' },
  // Private, shared and unique-local space.
  { url: 'http://10.0.0.1/', reason: 'URL_ADDRESS_REFUSED', address: '10.0.0.1', address_class: 'private' },
  { url: 'http://172.16.5.4/', reason: 'URL_ADDRESS_REFUSED', address: '172.16.5.4', address_class: 'private' },
  { url: 'http://192.168.1.1/', reason: 'URL_ADDRESS_REFUSED', address: '192.168.1.1', address_class: 'private' },
  { url: 'http://100.64.0.1/', reason: 'URL_ADDRESS_REFUSED', address: '100.64.0.1', address_class: 'carrierGradeNat' },
  { url: 'http://[fd12::1]/', reason: 'URL_ADDRESS_REFUSED', address: 'fd12::1', address_class: 'uniqueLocal' },
  // Link-local and cloud metadata.
  { url: 'http://[fe80::1]/', reason: 'URL_ADDRESS_REFUSED', address: 'fe80::1', address_class: 'linkLocal' },
  { url: 'http://169.254.1.1/', reason: 'URL_ADDRESS_REFUSED', address: '169.254.1.1', address_class: 'linkLocal' },
  { url: 'http://169.254.169.254/latest/meta-data/', reason: 'URL_ADDRESS_REFUSED', address: '169.254.169.254', address_class: 'metadata' },
  { url: 'http://[fd00:ec2::254]/', reason: 'URL_ADDRESS_REFUSED', address: 'fd00:ec2::254', address_class: 'metadata' },
  { url: 'http://169.254.170.2/v2/credentials', reason: 'URL_ADDRESS_REFUSED', address: '169.254.170.2', address_class: 'metadata' },
  { url: 'http://100.100.100.200/latest/meta-data/', reason: 'URL_ADDRESS_REFUSED', address: '100.100.100.200', address_class: 'metadata' },
  // Multicast, unspecified, broadcast, reserved.
  { url: 'http://224.0.0.1/', reason: 'URL_ADDRESS_REFUSED', address: '224.0.0.1', address_class: 'multicast' },
  { url: 'http://[ff02::1]/', reason: 'URL_ADDRESS_REFUSED', address: 'ff02::1', address_class: 'multicast' },
  { url: 'http://0.0.0.0/', reason: 'URL_ADDRESS_REFUSED', address: '0.0.0.0', address_class: 'unspecified' },
  { url: 'http://0/', reason: 'URL_ADDRESS_REFUSED', address: '0.0.0.0', address_class: 'unspecified' },
  { url: 'http://[::]/', reason: 'URL_ADDRESS_REFUSED', address: '::', address_class: 'unspecified' },
  { url: 'http://255.255.255.255/', reason: 'URL_ADDRESS_REFUSED', address: '255.255.255.255', address_class: 'broadcast' },
  { url: 'http://240.0.0.1/', reason: 'URL_ADDRESS_REFUSED', address: '240.0.0.1', address_class: 'reserved' },
  { url: 'http://192.0.2.10/', reason: 'URL_ADDRESS_REFUSED', address: '192.0.2.10', address_class: 'reserved' },
  { url: 'http://[2001:db8::1]/', reason: 'URL_ADDRESS_REFUSED', address: '2001:db8::1', address_class: 'reserved' },
  { url: 'http://[fec0::1]/', reason: 'URL_ADDRESS_REFUSED', address: 'fec0::1', address_class: 'deprecatedSiteLocal' },
  // Names, through the real DNS server.
  { url: 'http://private.test/hook', reason: 'URL_ADDRESS_REFUSED', address: '10.0.0.5', address_class: 'private' },
  { url: 'http://mixed.test/hook', reason: 'URL_ADDRESS_REFUSED', address: '10.0.0.6', address_class: 'private' },
  { url: 'https://mixed6.test/hook', purpose: 'push', reason: 'URL_ADDRESS_REFUSED', address: 'fd12::6', address_class: 'uniqueLocal' },
  { url: 'http://metadata.test/', reason: 'URL_ADDRESS_REFUSED', address: '169.254.169.254', address_class: 'metadata' },
  { url: 'http://local.test:8080/', reason: 'URL_ADDRESS_REFUSED', address: '127.0.0.1', address_class: 'loopback' },
  { url: 'http://missing.test/', reason: 'URL_HOST_UNRESOLVABLE' },
  { url: 'http://nodata.test/', reason: 'URL_HOST_UNRESOLVABLE' },
  // Schemes and credentials.
  { url: `ftp://${PUBLIC_V4}/file`, reason: 'URL_SCHEME_REFUSED' },
  { url: 'file:///etc/passwd', reason: 'URL_SCHEME_REFUSED' },
  { url: 'http://public.test/push', purpose: 'push', reason: 'URL_SCHEME_REFUSED' },
  { url: 'ftp://public.test/push', purpose: 'push', reason: 'URL_SCHEME_REFUSED' },
  { url: 'http://user:secret-pass@public.test/', reason: 'URL_CREDENTIALS_REFUSED' },
  { url: 'https://user@public.test/', purpose: 'push', reason: 'URL_CREDENTIALS_REFUSED' },
]

/** The ServiceError `fn` rejects with (a failure if it resolves or throws anything else). */
async function refusal(fn: () => Promise<unknown>): Promise<ServiceError | null> {
  try {
    await fn()
    return null
  } catch (err) {
    return err instanceof ServiceError ? err : null
  }
}

function expectRefusal(t: Test, err: ServiceError | null, row: Refusal, where: string): void {
  if (!err) {
    t.fail(`${where}: ${row.url} was not refused with a ServiceError`)
    return
  }
  t.equal(err.code, 'UNSAFE_URL', `${where}: code`)
  t.equal(err.status, 400, `${where}: status`)
  t.equal(err.detail.reason, row.reason, `${where}: reason`)
  if (row.address !== undefined) t.equal(err.detail.address, row.address, `${where}: address`)
  if (row.address_class !== undefined) t.equal(err.detail.address_class, row.address_class, `${where}: address_class`)
  if (row.embedded_class !== undefined) {
    t.equal(err.detail.embedded_class, row.embedded_class, `${where}: embedded_class`)
    t.match(err.message, String(row.embedded_class), `${where}: the message names the embedded class`)
  }
}

t.test('every unsafe URL is refused at registration and again on the delivery path', async (t) => {
  // Registration and delivery hold their own guards, as the route and the delivery worker will.
  const registration = UrlGuard.create({ resolve: dns.resolver() })
  const delivery = UrlGuard.create({ resolve: dns.resolver() })
  const client = PinnedHttpClient.create({ timeoutMs: 300 })
  let posted = 0
  const deliver = async (url: string, purpose: UrlPurpose) => {
    const target = await delivery.check(url, purpose)
    posted++
    return client.post(target, '{}', { 'content-type': 'application/json' })
  }
  for (const row of REFUSED) {
    const purpose = row.purpose ?? 'hook'
    await t.test(`${row.url} (${purpose}) → ${row.reason} ${row.address_class ?? ''}`, async (t) => {
      expectRefusal(t, await refusal(() => registration.check(row.url, purpose)), row, 'registration')
      expectRefusal(t, await refusal(() => deliver(row.url, purpose)), row, 'delivery')
    })
  }
  t.equal(posted, 0, 'the delivery path never reached the client for a refused URL')
})

t.test('refusals carry what a client needs and never echo credentials', async (t) => {
  const guard = UrlGuard.create({ resolve: dns.resolver() })
  const scheme = await refusal(() => guard.check('http://public.test/', 'push'))
  t.equal(scheme?.detail.scheme, 'http')
  t.same(scheme?.detail.allowed_schemes, ['https'], 'push endpoints must be https')
  t.match(scheme?.message, /https/)
  const ftp = await refusal(() => guard.check('ftp://public.test/', 'hook'))
  t.same(ftp?.detail.allowed_schemes, ['http', 'https'])

  const creds = await refusal(() => guard.check('http://alice-login:secret-pass@public.test/', 'hook'))
  t.equal(creds?.detail.reason, 'URL_CREDENTIALS_REFUSED')
  t.notMatch(JSON.stringify(creds?.toEnvelope('req-1')), /secret-pass|alice-login/, 'neither the user name nor the password is echoed')

  const unresolvable = await refusal(() => guard.check('http://missing.test/', 'hook'))
  t.equal(unresolvable?.detail.host, 'missing.test')
  t.equal(unresolvable?.detail.dns_code, 'ENOTFOUND', 'the DNS answer was NXDOMAIN')
  const nodata = await refusal(() => guard.check('http://nodata.test/', 'hook'))
  t.equal(nodata?.detail.dns_code, 'ENODATA', 'the name exists but has no A or AAAA record')

  const envelope = (await refusal(() => guard.check('http://private.test/', 'hook')))?.toEnvelope('req-2')
  t.equal(envelope?.error.code, 'UNSAFE_URL')
  t.equal(envelope?.error.retryable, false)
  t.same(envelope?.error.detail, { reason: 'URL_ADDRESS_REFUSED', address: '10.0.0.5', address_class: 'private', host: 'private.test', purpose: 'hook' })
  t.match(envelope?.error.message, 'private.test resolves to 10.0.0.5')

  const notUrl = await refusal(() => guard.check('not a url', 'hook'))
  t.equal(notUrl?.code, 'VALIDATION', 'a string that is no URL at all is a validation error, not an address question')
  t.equal(notUrl?.detail.reason, 'REQUEST_VALIDATION_FAILED')
})

t.test('every special range ipaddr.js 2.5.0 names is refused: only unicast passes', async (t) => {
  const guard = UrlGuard.create({ resolve: dns.resolver() })
  type Ranges = Record<string, [ipaddr.IPv4 | ipaddr.IPv6, number] | Array<[ipaddr.IPv4 | ipaddr.IPv6, number]>>
  const tables = [
    (ipaddr.IPv4.prototype as unknown as { SpecialRanges: Ranges }).SpecialRanges,
    (ipaddr.IPv6.prototype as unknown as { SpecialRanges: Ranges }).SpecialRanges,
  ]
  const seen = new Set<string>()
  let names = 0
  for (const [kind, table] of tables.entries()) {
    for (const [name, value] of Object.entries(table)) {
      names++
      const subnets = Array.isArray(value[0]) ? (value as Array<[ipaddr.IPv4 | ipaddr.IPv6, number]>) : [value as [ipaddr.IPv4 | ipaddr.IPv6, number]]
      for (const [net] of subnets) {
        // The network's own address, as a URL literal (the WHATWG parser then re-normalizes it).
        const probe = net
        const literal = probe.kind() === 'ipv6' ? `[${probe.toString()}]` : probe.toString()
        const err = await refusal(() => guard.check(`http://${literal}/`, 'hook'))
        const expected = METADATA_ADDRESSES.includes(probe.toString()) ? 'metadata' : probe.range()
        t.equal(err?.detail.reason, 'URL_ADDRESS_REFUSED', `${literal} (${name}) is refused`)
        t.equal(err?.detail.address_class, expected === 'unicast' ? 'reserved' : expected, `${literal} is named ${expected}`)
        seen.add(`${kind === 0 ? 'IPv4' : 'IPv6'} ${name}`)
      }
    }
  }
  t.ok(names >= 25, `ipaddr.js 2.5.0 names ${names} special ranges across IPv4 and IPv6`)
  t.equal(seen.size, names, 'a probe ran for every range name')
})

t.test('public addresses pass and name the address to connect to (nothing is connected here)', async (t) => {
  const guard = UrlGuard.create({ resolve: dns.resolver() })
  const literal = await guard.check(`http://${PUBLIC_V4}/hook`, 'hook')
  t.same({ host: literal.host, address: literal.address, family: literal.family, port: literal.port }, { host: PUBLIC_V4, address: PUBLIC_V4, family: 4, port: 80 })
  t.equal(literal.url.pathname, '/hook')

  const v6 = await guard.check(`https://[${PUBLIC_V6}]:8443/p`, 'push')
  t.same({ host: v6.host, address: v6.address, family: v6.family, port: v6.port }, { host: PUBLIC_V6, address: PUBLIC_V6, family: 6, port: 8443 }, 'host without brackets')

  const named = await guard.check('https://public.test/hooks/1?x=2', 'hook')
  t.same({ host: named.host, address: named.address, family: named.family, port: named.port }, { host: 'public.test', address: PUBLIC_V4, family: 4, port: 443 }, 'the first allowed answer (A before AAAA)')
  t.equal(named.url.search, '?x=2')

  const six = await guard.check('https://public6.test/', 'push')
  t.same({ address: six.address, family: six.family }, { address: PUBLIC_V6, family: 6 }, 'an AAAA-only name')
})

t.test('a name that was public at registration and turns private is refused at delivery', async (t) => {
  dns.set('flip.test', { A: [PUBLIC_V4] })
  t.teardown(() => dns.delete('flip.test'))
  const guard = UrlGuard.create({ resolve: dns.resolver() })
  t.equal((await guard.check('https://flip.test/h', 'hook')).address, PUBLIC_V4, 'registration passes')
  dns.set('flip.test', { A: ['10.0.0.5'] })
  const err = await refusal(() => guard.check('https://flip.test/h', 'hook'))
  t.equal(err?.detail.reason, 'URL_ADDRESS_REFUSED', 'the delivery-time check sees the new answer')
  t.equal(err?.detail.address, '10.0.0.5')
})

t.test('the allowlist is off by default; 127.0.0.1/32 lets a local receiver through', async (t) => {
  const hits: IncomingMessage[] = []
  const server = createServer((req, res) => {
    hits.push(req)
    req.resume()
    req.on('end', () => res.end('ok'))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => {
    server.closeAllConnections()
    return new Promise((resolve) => server.close(resolve))
  })
  const port = (server.address() as { port: number }).port
  const url = `http://127.0.0.1:${port}/hook`
  const client = PinnedHttpClient.create({ timeoutMs: 2000 })

  const strict = UrlGuard.create({ resolve: dns.resolver() })
  const refused = await refusal(() => strict.check(url, 'hook'))
  t.equal(refused?.detail.address_class, 'loopback', 'without an allowlist the local receiver is refused')
  t.equal(hits.length, 0)

  const testing = UrlGuard.create({ resolve: dns.resolver(), allow: ['127.0.0.1/32'] })
  const target = await testing.check(url, 'hook')
  t.same({ address: target.address, port: target.port }, { address: '127.0.0.1', port })
  const result = await client.post(target, '{"a":1}', { 'content-type': 'application/json' })
  t.equal(result.status, 200)
  t.equal(result.error_class, null)
  t.equal(hits.length, 1, 'the receiver got the delivery')

  const byName = await testing.check(`http://local.test:${port}/`, 'hook')
  t.equal(byName.address, '127.0.0.1', 'an allowlisted address passes behind a name too')

  for (const other of ['http://127.0.0.2/', 'http://[::1]/', 'http://[::ffff:127.0.0.1]/', 'http://10.0.0.1/']) {
    t.equal((await refusal(() => testing.check(other, 'hook')))?.detail.reason, 'URL_ADDRESS_REFUSED', `${other} is outside 127.0.0.1/32`)
  }
})

t.test('metadata addresses stay refused even inside the allowlist', async (t) => {
  const guard = UrlGuard.create({ resolve: dns.resolver(), allow: ['169.254.0.0/16', '100.64.0.0/10', 'fd00::/8'] })
  t.equal((await guard.check('http://169.254.1.1/', 'hook')).address, '169.254.1.1', 'the allowlist works for link-local')
  for (const address of METADATA_ADDRESSES) {
    const literal = address.includes(':') ? `[${address}]` : address
    const err = await refusal(() => guard.check(`http://${literal}/`, 'hook'))
    t.equal(err?.detail.address_class, 'metadata', `${address} is refused as metadata`)
  }
})

t.test('the default resolver is the system one (getaddrinfo): localhost is refused as loopback', async (t) => {
  const guard = UrlGuard.create()
  const err = await refusal(() => guard.check('http://localhost:9/', 'hook'))
  t.equal(err?.detail.reason, 'URL_ADDRESS_REFUSED')
  t.equal(err?.detail.address_class, 'loopback')
  t.equal(err?.detail.host, 'localhost')
  await guard.close()
})

t.test('options are validated, naming the field', async (t) => {
  const cases: Array<[unknown, string]> = [
    [{ allow: ['127.0.0.1'] }, '/allow/0'],
    [{ allow: ['127.0.0.1/32', 'not-a-cidr/8'] }, '/allow/1'],
    [{ allow: '127.0.0.1/32' }, '/allow'],
    [{ resolve: 'dns' }, '/resolve'],
    [{ allowlist: [] }, '/allowlist'],
  ]
  for (const [options, path] of cases) {
    let caught: unknown = null
    try {
      UrlGuard.create(options as Parameters<typeof UrlGuard.create>[0])
    } catch (err) {
      caught = err
    }
    t.ok(caught instanceof OptionsError, `${JSON.stringify(options)} is refused`)
    t.equal((caught as OptionsError).path, path, `the error names ${path}`)
    t.match((caught as Error).message, `UrlGuard options${path}`)
  }
})
