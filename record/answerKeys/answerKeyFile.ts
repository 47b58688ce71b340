/**
 * Where the answer keys live: <data dir>/answer-keys/keyring.json (mode 0600 in a 0700 folder), every key ever used
 * with its window, and the private key of the one in force only when the service made it (a key given by
 * configuration, SVC_ANSWER_KEY, is never written). A retired key keeps its address and window (old receipts still
 * verify) but loses its private key: nothing it could sign after its window would count anyway.
 *
 * Rotation closes the window of the key in force at the rotation instant and opens the next one there: a new key made
 * here (`svc answer-key rotate`), or a different SVC_ANSWER_KEY at the next start.
 */
import { randomBytes } from 'node:crypto'
import { mkdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { privateKeyToAccount } from 'viem/accounts'
import type { Hex } from 'viem'
import { writeFileAtomic } from '../../pipeline/log/atomicFile.ts'
import { AnswerKeyring } from './AnswerKeyring.ts'
import { SigningWorker } from './SigningWorker.ts'
import type { PublishedAnswerKey } from './answerSignature.ts'

export const ANSWER_KEYS_DIR = 'answer-keys'
const KEYRING_FILE = 'keyring.json'
const PRIVATE_KEY = /^0x[0-9a-fA-F]{64}$/

interface KeyEntry extends PublishedAnswerKey {
  source: 'generated' | 'configured'
  /** Only for the generated key in force. */
  private_key?: Hex
}

interface KeyringFile {
  version: 1
  keys: KeyEntry[]
}

export interface AnswerKeyOptions {
  /** The data folder (the keyring is kept in its answer-keys/ folder). */
  dataDir: string
  /** SVC_ANSWER_KEY: a secp256k1 private key (0x + 64 hex digits); unset: the service makes one and keeps it. */
  configuredKey?: string | null
  now: () => number
  /** Sign on a worker thread (the service: a signature costs as much as the rest of a paid call). Close the keyring. */
  worker?: boolean
}

/** The keyring of a data folder, opening a key (or rotating to the configured one) when needed. */
export async function openAnswerKeyring(o: AnswerKeyOptions): Promise<AnswerKeyring> {
  const dir = join(o.dataDir, ANSWER_KEYS_DIR)
  const file = await readKeyring(dir)
  const at = new Date(o.now()).toISOString()
  const active = file.keys.at(-1)
  let privateKey: Hex
  if (o.configuredKey) {
    if (!PRIVATE_KEY.test(o.configuredKey)) throw new Error('SVC_ANSWER_KEY must be a secp256k1 private key: 0x and 64 hex digits')
    privateKey = o.configuredKey as Hex
    const address = privateKeyToAccount(privateKey).address
    if (active?.valid_until !== null || active.address.toLowerCase() !== address.toLowerCase()) {
      openNext(file, { address, valid_from: at, valid_until: null, source: 'configured' }, at)
      await writeKeyring(dir, file)
    }
  } else if (active?.valid_until === null && active.private_key) {
    privateKey = active.private_key
  } else {
    // First start, or the configured key was removed: the service makes its own key from here on.
    privateKey = newPrivateKey()
    openNext(file, { address: privateKeyToAccount(privateKey).address, valid_from: at, valid_until: null, source: 'generated', private_key: privateKey }, at)
    await writeKeyring(dir, file)
  }
  return new AnswerKeyring(file.keys.map(published), privateKeyToAccount(privateKey), o.now, o.worker ? SigningWorker.start(privateKey) : null)
}

/**
 * Retires the key in force at now and makes the next one (the service must not be running on this data folder: its
 * keyring is read at start). Refused while SVC_ANSWER_KEY names the key: configuration rotates that one.
 */
export async function rotateAnswerKey(o: AnswerKeyOptions): Promise<{ retired: PublishedAnswerKey | null; active: PublishedAnswerKey }> {
  if (o.configuredKey) throw new Error('SVC_ANSWER_KEY is set: rotate by configuring the next key (the old one is retired at the next start)')
  const dir = join(o.dataDir, ANSWER_KEYS_DIR)
  const file = await readKeyring(dir)
  const at = new Date(o.now()).toISOString()
  const before = file.keys.at(-1)
  const privateKey = newPrivateKey()
  const next: KeyEntry = { address: privateKeyToAccount(privateKey).address, valid_from: at, valid_until: null, source: 'generated', private_key: privateKey }
  openNext(file, next, at)
  await writeKeyring(dir, file)
  return { retired: before ? published(before) : null, active: published(next) }
}

/** Closes the open window (if any) at `at` and appends the next key; a retired key keeps no private key. */
function openNext(file: KeyringFile, next: KeyEntry, at: string): void {
  for (const k of file.keys) {
    if (k.valid_until === null) k.valid_until = at
    delete k.private_key
  }
  file.keys.push(next)
}

function published(k: PublishedAnswerKey): PublishedAnswerKey {
  return Object.freeze({ address: k.address, valid_from: k.valid_from, valid_until: k.valid_until })
}

function newPrivateKey(): Hex {
  return `0x${randomBytes(32).toString('hex')}`
}

async function readKeyring(dir: string): Promise<KeyringFile> {
  try {
    const parsed = JSON.parse(await readFile(join(dir, KEYRING_FILE), 'utf8')) as KeyringFile
    if (parsed.version !== 1 || !Array.isArray(parsed.keys)) throw new Error(`${join(dir, KEYRING_FILE)} is not an answer keyring (version 1)`)
    return parsed
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { version: 1, keys: [] }
    throw err
  }
}

async function writeKeyring(dir: string, file: KeyringFile): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 })
  await writeFileAtomic(join(dir, KEYRING_FILE), JSON.stringify(file, null, 2) + '\n', { mode: 0o600 })
}
