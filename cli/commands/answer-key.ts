/**
 * `svc answer-key rotate|show`: the deployment's answer keys (record/answerKeys/answerKeyFile.ts). Rotation retires
 * the key in force now (its window closes, its address stays published, its private key is dropped) and makes the
 * next one; the service reads the keyring at start, so rotate with it stopped and start it again.
 */
import { existsSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { join, resolve } from 'node:path'
import { childLogger } from '../../common/logger.ts'
import { DirLock } from '../../pipeline/log/DirLock.ts'
import { UsageError, type Command } from '../Command.ts'
import { environment } from '../environment.ts'
import { openAnswerKeyring, rotateAnswerKey } from '../../record/answerKeys/answerKeyFile.ts'

const usage = (verb: string) => `Usage: svc answer-key ${verb} [--data-dir DIR]

${verb === 'rotate'
  ? 'Retires the answer key in force (its window closes now; it stays published so what it signed still verifies) and\nmakes the next one in $SVC_DATA_DIR/answer-keys/keyring.json. Run it with the service stopped. Refused while\nSVC_ANSWER_KEY is set: configure the next key instead (the old one is retired at the next start).'
  : 'Prints every answer key with its validity window (the list GET /v1/answer-keys publishes), making the first key\nif the data folder has none yet.'}

Options:
  --data-dir DIR   data folder (default $SVC_DATA_DIR or ./data)
`

function keysCommand(verb: 'rotate' | 'show', summary: string): Command {
  return {
    name: `answer-key ${verb}`,
    summary,
    usage: usage(verb),
    async run(argv) {
      const { values, positionals } = parseArgs({ args: argv, options: { 'data-dir': { type: 'string' } }, strict: true, allowPositionals: true })
      if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`)
      const config = environment({ SVC_DATA_DIR: values['data-dir'] })
      const options = { dataDir: resolve(config.SVC_DATA_DIR), configuredKey: config.SVC_ANSWER_KEY ?? null, now: Date.now }
      if (verb === 'rotate') {
        // A running service keeps signing with the key it read at start, whose window this would close: holding the
        // embedded log's lock for the rotation refuses it (LOG_LOCKED) while a service owns the data folder.
        const logDir = join(options.dataDir, 'log')
        const lock = existsSync(logDir) ? await DirLock.acquire(logDir, childLogger('answer-key'), 'rotate with the service stopped: a running `svc start` signs with the key it read at start; stop it, rotate, start it again') : null
        try {
          const r = await rotateAnswerKey(options)
          process.stdout.write(`answer-key: ${r.retired ? `retired ${r.retired.address} at ${r.retired.valid_until}; ` : ''}in force ${r.active.address} from ${r.active.valid_from}\n`)
        } finally {
          await lock?.release()
        }
      } else {
        const ring = await openAnswerKeyring(options)
        for (const k of ring.keys) process.stdout.write(`${k.address}  ${k.valid_from} → ${k.valid_until ?? 'in force'}\n`)
      }
      return 0
    },
  }
}

export const commands: Command[] = [
  keysCommand('rotate', 'Retire the answer key in force and make the next one (service stopped)'),
  keysCommand('show', 'List the answer keys with their validity windows'),
]
