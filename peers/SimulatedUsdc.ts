/**
 * An in-memory stand-in for the USDC contract on Base, shaped as @x402/evm's FacilitatorEvmSigner, so the reference
 * facilitator code (`@x402/evm/exact/facilitator` ExactEvmScheme) runs offline, without an RPC. Test-only.
 *
 * It enforces what FiatTokenV2 `transferWithAuthorization` enforces (x402-v2.md §7, §8.9): block time after
 * validAfter and before validBefore, an unused (authorizer, nonce), a signature over the EIP-712 message with the
 * token's own domain that recovers `from`, and a sufficient balance. Revert messages are FiatTokenV2's, so the
 * reference facilitator maps them to its reason strings.
 *
 * Transaction hashes are FAKE: keccak256 of a label and the authorization (deterministic per payload). No chain is
 * involved and nothing here is a real transfer.
 */
import {
  decodeFunctionData, encodeAbiParameters, encodeFunctionResult, getAddress, keccak256, parseAbi, recoverTypedDataAddress,
  serializeSignature, stringToHex, verifyTypedData, type Hex,
} from 'viem'
import { BASE_USDC_DOMAIN, TRANSFER_WITH_AUTHORIZATION_TYPES } from '../serving/payments/x402/X402Verifier.ts'

type Args = { address: Hex; abi: readonly unknown[]; functionName: string; args?: readonly unknown[] }

export interface SimulatedTransfer {
  transaction: Hex
  from: Hex
  to: Hex
  value: bigint
  nonce: Hex
}

/** The token's view functions, for calls that arrive as calldata through Multicall3. */
const USDC_VIEWS = parseAbi([
  'function name() view returns (string)',
  'function version() view returns (string)',
  'function balanceOf(address account) view returns (uint256)',
  'function authorizationState(address authorizer, bytes32 nonce) view returns (bool)',
])
/** Multicall3, at the same address on every EVM chain; the reference facilitator batches its diagnostics through it. */
const MULTICALL3 = '0xcA11bde05977b3631167028862bE2a173976CA11'

/** The facilitator's own (gas-paying) address; arbitrary, never funded anywhere. */
const FACILITATOR_SIGNER = '0x00000000000000000000000000000000000F4C17' as Hex

export class SimulatedUsdc {
  readonly address = BASE_USDC_DOMAIN.verifyingContract
  readonly balances = new Map<string, bigint>()
  readonly transfers: SimulatedTransfer[] = []
  private readonly used = new Set<string>()
  private readonly receipts = new Map<string, { status: 'success' | 'reverted' }>()
  /** Told of each transfer once it is applied (`svc dev facilitator` prints it). */
  onTransfer: ((t: SimulatedTransfer) => void) | null = null

  constructor(private readonly nowSeconds: () => number = () => Math.floor(Date.now() / 1000)) {}

  fund(account: string, atomic: bigint): void {
    this.balances.set(account.toLowerCase(), this.balanceOf(account) + atomic)
  }

  balanceOf(account: string): bigint {
    return this.balances.get(account.toLowerCase()) ?? 0n
  }

  isUsed(from: string, nonce: string): boolean {
    return this.used.has(`${from.toLowerCase()}:${nonce.toLowerCase()}`)
  }

  // ------------------------------------------------------------------ FacilitatorEvmSigner

  getAddresses(): readonly Hex[] {
    return [FACILITATOR_SIGNER]
  }

  async getCode({ address }: { address: Hex }): Promise<Hex | undefined> {
    // The token is a contract; every other account here is an EOA.
    return address.toLowerCase() === this.address.toLowerCase() ? '0x6080604052' : '0x'
  }

  async verifyTypedData(args: {
    address: Hex
    domain: Record<string, unknown>
    types: Record<string, unknown>
    primaryType: string
    message: Record<string, unknown>
    signature: Hex
  }): Promise<boolean> {
    return verifyTypedData(args as Parameters<typeof verifyTypedData>[0])
  }

  async readContract(a: Args): Promise<unknown> {
    if (a.address.toLowerCase() === MULTICALL3.toLowerCase() && a.functionName === 'tryAggregate') {
      const calls = (a.args?.[1] ?? []) as Array<{ target: Hex; callData: Hex }>
      return Promise.all(calls.map((c) => this.viewCall(c.target, c.callData)))
    }
    this.onlyToken(a.address)
    switch (a.functionName) {
      case 'name':
        return BASE_USDC_DOMAIN.name
      case 'version':
        return BASE_USDC_DOMAIN.version
      case 'balanceOf':
        return this.balanceOf(String(a.args?.[0]))
      case 'authorizationState':
        return this.isUsed(String(a.args?.[0]), String(a.args?.[1]))
      case 'transferWithAuthorization':
        // eth_call simulation: every check, no state change.
        await this.check(a.args ?? [])
        return undefined
      default:
        throw new Error(`SimulatedUsdc: ${a.functionName} is not simulated`)
    }
  }

  async writeContract(a: Args & { args: readonly unknown[] }): Promise<Hex> {
    this.onlyToken(a.address)
    if (a.functionName !== 'transferWithAuthorization') throw new Error(`SimulatedUsdc: ${a.functionName} is not simulated`)
    const t = await this.check(a.args)
    this.used.add(`${t.from.toLowerCase()}:${t.nonce.toLowerCase()}`)
    this.balances.set(t.from.toLowerCase(), this.balanceOf(t.from) - t.value)
    this.fund(t.to, t.value)
    const transaction = keccak256(
      encodeAbiParameters(
        [{ type: 'bytes32' }, { type: 'address' }, { type: 'address' }, { type: 'uint256' }, { type: 'bytes32' }],
        [keccak256(stringToHex('FAKE local-facilitator tx')), t.from, t.to, t.value, t.nonce],
      ),
    )
    this.transfers.push({ transaction, ...t })
    this.receipts.set(transaction, { status: 'success' })
    this.onTransfer?.({ transaction, ...t })
    return transaction
  }

  async sendTransaction(): Promise<Hex> {
    throw new Error('SimulatedUsdc: raw transactions are not simulated')
  }

  async waitForTransactionReceipt({ hash }: { hash: Hex }): Promise<{ status: string }> {
    const r = this.receipts.get(hash)
    if (!r) throw new Error(`SimulatedUsdc: unknown transaction ${hash}`)
    return r
  }

  // ------------------------------------------------------------------ FiatTokenV2 rules

  private async viewCall(target: Hex, callData: Hex): Promise<{ success: boolean; returnData: Hex }> {
    try {
      const { functionName, args } = decodeFunctionData({ abi: USDC_VIEWS, data: callData })
      const result = await this.readContract({ address: target, abi: USDC_VIEWS, functionName, args: args ?? [] })
      return { success: true, returnData: encodeFunctionResult({ abi: USDC_VIEWS, functionName, result } as Parameters<typeof encodeFunctionResult>[0]) }
    } catch {
      return { success: false, returnData: '0x' }
    }
  }

  private onlyToken(address: Hex): void {
    if (address.toLowerCase() !== this.address.toLowerCase()) throw new Error(`SimulatedUsdc: no contract at ${address}`)
  }

  private async check(args: readonly unknown[]): Promise<Omit<SimulatedTransfer, 'transaction'>> {
    const [from, to, value, validAfter, validBefore, nonce, ...sig] = args as [Hex, Hex, bigint, bigint, bigint, Hex, ...unknown[]]
    const now = BigInt(this.nowSeconds())
    if (now <= validAfter) throw new Error('FiatTokenV2: authorization is not yet valid')
    if (now >= validBefore) throw new Error('FiatTokenV2: authorization is expired')
    if (this.isUsed(from, nonce)) throw new Error('FiatTokenV2: authorization is used or canceled')
    const signature: Hex =
      sig.length === 3
        ? serializeSignature({ v: BigInt(sig[0] as number | bigint), r: sig[1] as Hex, s: sig[2] as Hex })
        : (sig[0] as Hex)
    let signer: Hex
    try {
      signer = await recoverTypedDataAddress({
        domain: BASE_USDC_DOMAIN,
        types: TRANSFER_WITH_AUTHORIZATION_TYPES,
        primaryType: 'TransferWithAuthorization',
        message: { from, to, value, validAfter, validBefore, nonce },
        signature,
      })
    } catch {
      throw new Error('FiatTokenV2: invalid signature')
    }
    if (getAddress(signer) !== getAddress(from)) throw new Error('FiatTokenV2: invalid signature')
    if (this.balanceOf(from) < value) throw new Error('ERC20: transfer amount exceeds balance')
    return { from: getAddress(from), to: getAddress(to), value, nonce }
  }
}
