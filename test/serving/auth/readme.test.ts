/**
 * README's reference client ("Proving the payer") runs as printed: the ```ts block under the readme-snippet marker is
 * written to a file and run with node against a real server, signing in with a viem key and reading its credits.
 */
import t from 'tap'
import { execFile } from 'node:child_process'
import { readFile, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { CreditsPaymentGate } from '../../../serving/payments/CreditsPaymentGate.ts'
import { RailRouter } from '../../../serving/payments/RailRouter.ts'
import { OPS_TOKEN, withBilling } from '../../helpers/serving/billing.ts'
import { PAY_TO, jsonCaller, withServer } from '../../helpers/serving/server.ts'
import { makeTempDir } from '../../helpers/tmp.ts'

const ROOT = new URL('../../../', import.meta.url).pathname

t.test('the README sign-in snippet runs as printed', async (t) => {
  const readme = await readFile(join(ROOT, 'README.md'), 'utf8')
  const m = /<!-- readme-snippet: sign-in -->\n```ts\n([\s\S]*?)\n```/.exec(readme)
  t.ok(m, 'README carries the snippet')
  const billing = await withBilling(t)
  const server = await withServer(t, { services: { billing, paymentGate: new RailRouter({ payTo: PAY_TO, credits: new CreditsPaymentGate(billing.ledger, PAY_TO) }) } })
  const key = generatePrivateKey()
  const address = privateKeyToAccount(key).address
  t.equal((await jsonCaller(server)('POST', '/v1/billing/grants', { action: 'grant', payer: address, credits: 4321, ref: 'readme' }, { 'x-svc-ops': OPS_TOKEN })).status, 200)
  const dir = await makeTempDir(t, 'svc-readme-')
  await symlink(join(ROOT, 'node_modules'), join(dir, 'node_modules'))
  const file = join(dir, 'snippet.mts') // an ES module wherever it lies (top-level await)
  await writeFile(file, m![1]!)
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', file], { env: { ...process.env, SVC_URL: server.url, PAYER_KEY: key }, timeout: 60_000 })
  t.equal(stdout.trim(), '4321', 'it signs in and reads its own balance')
})
