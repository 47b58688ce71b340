/**
 * The well-known public Hardhat/Anvil development accounts (x402-v2.md §12.2): keys everyone has, so TEST keys only.
 * Never fund them on a real chain; the local facilitator funds the payer in its simulated USDC.
 */

/** Account #0: the payer of tests and of `svc dev facilitator`. */
export const TEST_PAYER_KEY = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80' as const
export const TEST_PAYER_ADDRESS = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266'
/** Account #1's address: the recipient `svc dev facilitator` suggests for SVC_PAY_TO. */
export const TEST_PAY_TO = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
