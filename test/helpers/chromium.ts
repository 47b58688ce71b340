/**
 * Headless Chromium for the page tests (playwright-core drives the Debian `chromium` binary; it ships no browser):
 * where it is, whether it is there, and one way to launch it.
 */
import { access, constants } from 'node:fs/promises'
import { chromium, type Browser } from 'playwright-core'

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

/** Null when the binary is there and executable, else why not (for skipUnlessTool). */
export async function chromiumMissing(): Promise<string | null> {
  try {
    await access(CHROMIUM, constants.X_OK)
    return null
  } catch {
    return `no chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`
  }
}

/** A headless browser (no sandbox: tests run as root in CI; no /dev/shm: small containers). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] })
}
