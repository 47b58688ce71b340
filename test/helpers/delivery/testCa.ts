/**
 * A throwaway certificate authority for HTTPS delivery tests, made with the real `openssl` CLI in a temp dir (removed
 * at teardown): a self-signed CA and server certificates it signs for the names a test asks for. Keys are P-256 (fast
 * to generate); certificates live two days, so a suite never meets an expired one.
 *
 *   const ca = await createTestCa(t)
 *   const { key, cert } = await ca.issue(SERVER_NAMES)        // localhost, hooks.test, 127.0.0.1
 *   https.createServer({ key, cert }, ...)                    // and PinnedHttpClient.create({ ca: ca.cert })
 */
import { execFile } from 'node:child_process'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { makeTempDir } from '../tmp.ts'

const run = promisify(execFile)
export const OPENSSL = '/usr/bin/openssl'

export interface IssuedCert {
  /** PEM private key of the server. */
  key: string
  /** PEM certificate of the server, signed by the CA. */
  cert: string
}

/** A CA: its certificate (the trust anchor a client adds) and a way to sign server certificates. */
export interface TestCa {
  name: string
  /** PEM certificate of the CA. */
  cert: string
  /** A server certificate for these names and addresses (subjectAltName; the CN is the first name). */
  issue(names: { dns?: readonly string[]; ip?: readonly string[] }): Promise<IssuedCert>
}

/** The names the delivery tests serve under: the loopback address, localhost and a made-up name for the test DNS. */
export const SERVER_NAMES = { dns: ['localhost', 'hooks.test'], ip: ['127.0.0.1'] } as const

/** A new CA named `name` in its own temp dir. */
export async function createTestCa(t: { teardown(fn: () => unknown): void }, name = 'svc delivery test CA'): Promise<TestCa> {
  const dir = await makeTempDir(t, 'svc-test-ca-')
  await run(OPENSSL, [
    'req', '-x509', '-new', '-nodes', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1',
    '-keyout', join(dir, 'ca.key'), '-out', join(dir, 'ca.pem'), '-days', '2', '-subj', `/CN=${name}`,
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
  ])
  let serial = 0
  const issue = async (names: { dns?: readonly string[]; ip?: readonly string[] }): Promise<IssuedCert> => {
    const id = `server${++serial}`
    const dns = names.dns ?? []
    const ip = names.ip ?? []
    if (dns.length + ip.length === 0) throw new Error('TestCa.issue: name at least one DNS name or IP address')
    const p = (ext: string) => join(dir, `${id}.${ext}`)
    const san = [...dns.map((d) => `DNS:${d}`), ...ip.map((a) => `IP:${a}`)].join(',')
    await writeFile(p('ext'), `subjectAltName=${san}\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n`)
    await run(OPENSSL, [
      'req', '-new', '-nodes', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1',
      '-keyout', p('key'), '-out', p('csr'), '-subj', `/CN=${dns[0] ?? ip[0]}`,
    ])
    await run(OPENSSL, [
      'x509', '-req', '-in', p('csr'), '-CA', join(dir, 'ca.pem'), '-CAkey', join(dir, 'ca.key'),
      '-set_serial', String(1000 + serial), '-days', '2', '-sha256', '-extfile', p('ext'), '-out', p('pem'),
    ])
    return { key: await readFile(p('key'), 'utf8'), cert: await readFile(p('pem'), 'utf8') }
  }
  return { name, cert: await readFile(join(dir, 'ca.pem'), 'utf8'), issue }
}
