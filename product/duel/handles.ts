/**
 * Public handles (spec, Authentication 6: "public handles are derived and abbreviated"; Call and duel boards: "derived
 * abbreviated handle"). A handle shows the first four and last four hex digits of the address, so a player recognises
 * their own row as wallets display it, and never the full address (docs/decisions.md).
 */
export function handleOf(payer: string): string {
  const a = payer.toLowerCase()
  return `${a.slice(0, 6)}…${a.slice(-4)}`
}
