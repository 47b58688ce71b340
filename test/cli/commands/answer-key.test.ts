/**
 * `svc answer-key show|rotate` as an operator runs it: a process per call. show makes the first key, rotate retires it
 * (window closed, still listed) and makes the next; rotate is refused while a service owns the data folder (the
 * embedded log's lock) and while SVC_ANSWER_KEY names the key.
 */
import t from 'tap'
import { execFile } from 'node:child_process'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { pino } from 'pino'
import { generatePrivateKey } from 'viem/accounts'
import { DirLock } from '../../../pipeline/log/DirLock.ts'
import { makeTempDir } from '../../helpers/tmp.ts'

const run = promisify(execFile)
const SVC = new URL('../../../bin/svc.js', import.meta.url).pathname
const env = { ...process.env, CI: 'true', NODE_ENV: 'test' }
const KEY_LINE = /^(0x[0-9a-fA-F]{40})  (\S+) → (\S+( \S+)?)$/

t.test('svc answer-key: show makes the first key, rotate retires it and makes the next; refused while a service runs', async (t) => {
  const dataDir = await makeTempDir(t)
  const lines = async () => (await run('node', [SVC, 'answer-key', 'show', '--data-dir', dataDir], { env })).stdout.trim().split('\n').map((l) => KEY_LINE.exec(l)!)
  const [first] = await lines()
  t.equal(first![3], 'in force')
  const rotated = await run('node', [SVC, 'answer-key', 'rotate', '--data-dir', dataDir], { env })
  t.match(rotated.stdout, new RegExp(`^answer-key: retired ${first![1]} at \\S+; in force 0x[0-9a-fA-F]{40} from \\S+`))
  const after = await lines()
  t.equal(after.length, 2)
  t.same([after[0]![1], after[0]![3] === after[1]![2], after[1]![3]], [first![1], true, 'in force'], 'the old window closes where the new one opens')

  await mkdir(join(dataDir, 'log'))
  const lock = await DirLock.acquire(join(dataDir, 'log'), pino({ level: 'silent' }))
  const refused = await run('node', [SVC, 'answer-key', 'rotate', '--data-dir', dataDir], { env }).then(() => null, (err: { stderr: string }) => err)
  t.match(refused?.stderr, /LOG_LOCKED/, 'refused while the data folder is owned')
  t.match(refused?.stderr, /rotate with the service stopped/, 'a hint that helps')
  t.notMatch(refused?.stderr, /kafka/i, 'not the event log\'s advice')
  await lock.release()
  const configured = await run('node', [SVC, 'answer-key', 'rotate', '--data-dir', dataDir], { env: { ...env, SVC_ANSWER_KEY: generatePrivateKey() } }).then(() => null, (err: { stderr: string }) => err)
  t.match(configured?.stderr, /SVC_ANSWER_KEY is set/, 'refused while configuration names the key')
  t.equal((await lines()).length, 2, 'nothing changed by the refusals')
})
