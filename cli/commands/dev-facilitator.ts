/**
 * `svc dev facilitator` (issue 33 item 4): x402 per call, tried on one machine. Runs the local facilitator
 * (peers/LocalFacilitator.ts: the reference @x402 facilitator code over a simulated USDC, no chain) on a port, funds a
 * test payer in it, prints the facilitator URL, the payer's key and address and the exact environment that starts the
 * service against it, then one line per settlement until SIGINT or SIGTERM. README "Try x402 per call locally" runs it.
 *
 * A development command: the peers and their @x402 packages are devDependencies, imported only when it runs (so
 * `svc --help` does not load them); test/layers.test.ts allows exactly this arrow, cli/commands/dev-*.ts → peers/.
 */
import { parseArgs } from 'node:util'
import { UsageError, numberFlag, type Command } from '../Command.ts'
import { ADDRESS_PATTERN } from '../../common/schema.ts'

/** The default port: clear of the service's 8080 and the local venue's 9100. */
export const DEV_FACILITATOR_PORT = 4020
const USDC_DECIMALS = 6

const usage = `Usage: svc dev facilitator [--port N] [--host H] [--key 0x…] [--pay-to 0x…] [--fund USDC]

Runs a local x402 facilitator (POST /verify, POST /settle, GET /supported: the reference @x402 facilitator over a
simulated USDC on eip155:8453; its receipts carry FAKE transaction hashes and nothing touches a chain), funds a test
payer in it, and prints the environment that points the service at it. Stop it with Ctrl-C.

Options:
  --port N       port, default ${DEV_FACILITATOR_PORT} (0: a free port)
  --host H       interface, default 127.0.0.1
  --key 0x…      the payer's private key, default the public Anvil test account #0 (never hold real funds with it)
  --pay-to 0x…   the recipient to suggest for SVC_PAY_TO, default the Anvil test account #1's address
  --fund USDC    simulated USDC credited to the payer, default 100
`

export const command: Command = {
  name: 'dev facilitator',
  summary: 'Run a local x402 facilitator with a funded test payer, and print how to start the service against it',
  usage,
  async run(argv) {
    const { values } = parseArgs({
      args: argv,
      allowPositionals: false,
      options: {
        port: { type: 'string' },
        host: { type: 'string' },
        key: { type: 'string' },
        'pay-to': { type: 'string' },
        fund: { type: 'string' },
      },
    })
    const port = numberFlag('port', values.port, DEV_FACILITATOR_PORT, (n) => Number.isInteger(n) && n >= 0 && n <= 65535, 'an integer port 0..65535')
    const fund = numberFlag('fund', values.fund, 100, (n) => n > 0 && n <= 1e9, 'a number of USDC > 0')
    if (values.key !== undefined && !/^0x[0-9a-fA-F]{64}$/.test(values.key)) throw new UsageError('--key must be 0x and 64 hex digits')
    if (values['pay-to'] !== undefined && !ADDRESS_PATTERN.test(values['pay-to'])) throw new UsageError('--pay-to must be a 0x-prefixed 20-byte hex address')

    const [{ LocalFacilitator }, { TEST_PAYER_KEY, TEST_PAY_TO }, { privateKeyToAccount }] = await Promise.all([
      import('../../peers/LocalFacilitator.ts'),
      import('../../peers/testAccounts.ts'),
      import('viem/accounts'),
    ])
    const key = (values.key ?? TEST_PAYER_KEY) as `0x${string}`
    const payer = privateKeyToAccount(key).address
    const payTo = values['pay-to'] ?? TEST_PAY_TO
    const host = values.host ?? '127.0.0.1'

    let facilitator: Awaited<ReturnType<typeof LocalFacilitator.start>>
    try {
      facilitator = await LocalFacilitator.start({ port, host })
    } catch (err) {
      const code = (err as { code?: string }).code
      if (code !== 'EADDRINUSE' && code !== 'EADDRNOTAVAIL' && code !== 'EACCES') throw err
      process.stderr.write(`svc dev facilitator: cannot listen on ${host}:${port} (${code}); try --port 0\n`)
      return 1
    }
    facilitator.token.fund(payer, BigInt(Math.round(fund * 10 ** USDC_DECIMALS)))
    facilitator.token.onTransfer = (t) => {
      process.stdout.write(`settled ${usdc(t.value)} USDC from ${t.from} to ${t.to}: tx ${t.transaction} (fake); payer balance ${usdc(facilitator.token.balanceOf(t.from))} USDC\n`)
    }

    process.stdout.write(
      [
        'local x402 facilitator (reference @x402 facilitator over a simulated USDC on eip155:8453; FAKE transaction hashes, no chain)',
        `  facilitator  ${facilitator.url}`,
        `  payer        ${payer} (funded with ${fund} USDC, simulated)`,
        `  payer key    ${key}${values.key === undefined ? ' (the public Anvil test account #0: never hold real funds with it)' : ''}`,
        `  pay to       ${payTo}`,
        'Start the service against it:',
        `SVC_PAY_TO=${payTo} SVC_FACILITATOR_URL=${facilitator.url} npm start`,
        'Pay per call with @x402/fetch (README "Try x402 per call locally"):',
        `PAYER_KEY=${key} node --import tsx pay.mts`,
        '',
      ].join('\n'),
    )

    const signal = await new Promise<string>((resolve) => {
      process.once('SIGINT', () => resolve('SIGINT'))
      process.once('SIGTERM', () => resolve('SIGTERM'))
    })
    await facilitator.close()
    const { verify, settle } = facilitator.calls
    process.stderr.write(`svc dev facilitator: ${signal}; closed (${verify} verify, ${settle} settle)\n`)
    return 0
  },
}

/** Atomic USDC (6 decimals) as a decimal text. */
function usdc(atomic: bigint): string {
  const whole = atomic / 10n ** BigInt(USDC_DECIMALS)
  const frac = (atomic % 10n ** BigInt(USDC_DECIMALS)).toString().padStart(USDC_DECIMALS, '0').replace(/0+$/, '')
  return frac ? `${whole}.${frac}` : String(whole)
}
