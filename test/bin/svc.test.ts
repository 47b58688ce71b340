/**
 * bin/svc.js runs a bundle of the CLI cached by a hash of the sources (start-up time, issue 31). On a copy of the
 * checkout (its node_modules linked): the bundle says what the tsx run says; a source edited is seen at the next run
 * (a stale bundle is never run); a checkout where the cache cannot be written still runs, through tsx.
 */
import t from 'tap'
import { execFile } from 'node:child_process'
import { cp, mkdir, readFile, readdir, symlink, utimes, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { makeTempDir } from '../helpers/tmp.ts'

const exec = promisify(execFile)
const ROOT = new URL('../../', import.meta.url).pathname
const COPIED = ['bin', 'common', 'ingest', 'pipeline', 'models', 'engine', 'sql', 'record', 'product', 'serving', 'app', 'cli', 'peers', 'package.json', 'tsconfig.json']

async function copyCheckout(dir: string): Promise<void> {
  for (const name of COPIED) await cp(join(ROOT, name), join(dir, name), { recursive: true })
  await symlink(join(ROOT, 'node_modules'), join(dir, 'node_modules'))
}

async function svc(dir: string, args: string[], env: Record<string, string> = {}): Promise<string> {
  const r = await exec(process.execPath, [join(dir, 'bin', 'svc.js'), ...args], { env: { ...process.env, CI: 'true', SVC_DEBUG_BUNDLE: '1', ...env } })
  return r.stdout + r.stderr
}

t.test('the bundle answers as tsx does, and a source edited is a new bundle', async (t) => {
  const dir = await makeTempDir(t, 'svc-bin-')
  await copyCheckout(dir)
  const viaTsx = await svc(dir, ['--help'], { SVC_NO_BUNDLE: '1' })
  const built = await svc(dir, ['--help'])
  t.equal(built, viaTsx, 'the same help from the bundle as through tsx')
  t.notMatch(built, /no bundle/, 'the bundle ran (SVC_DEBUG_BUNDLE says so when it does not)')
  const builds = await readdir(join(dir, '.cache', 'svc'))
  t.equal(builds.length, 1, 'one build for these sources')
  t.equal(await svc(dir, ['--help']), built, 'the second run uses it')
  t.same(await readdir(join(dir, '.cache', 'svc')), builds, 'and builds nothing')

  // A file found through import.meta.url (docs env reads README.md beside the sources) is the checkout's, not the cache's.
  await cp(join(ROOT, 'README.md'), join(dir, 'README.md'))
  const env = await svc(dir, ['docs', 'env', '--check']).catch((err: { stdout: string; stderr: string }) => err.stdout + err.stderr)
  t.notMatch(env, /ENOENT|no bundle/, 'docs env --check read README.md beside the sources')

  const file = join(dir, 'cli', 'commands', 'docs.ts')
  const source = await readFile(file, 'utf8')
  const summary = /summary: '([^']+)'/.exec(source)?.[1]
  t.ok(summary, 'docs.ts has a summary')
  await writeFile(file, source.replace(`summary: '${summary}'`, `summary: 'EDITED ${summary}'`))
  // Two builds unused for 8 days: one held by a live process (this test's), one not; a new build prunes only the latter.
  const old = new Date(Date.now() - 8 * 24 * 3600_000)
  for (const name of ['stale', 'held']) await mkdir(join(dir, '.cache', 'svc', name, 'pids'), { recursive: true })
  await writeFile(join(dir, '.cache', 'svc', 'held', 'pids', String(process.pid)), '')
  for (const name of ['stale', 'held']) await utimes(join(dir, '.cache', 'svc', name), old, old)
  const edited = await svc(dir, ['--help'])
  t.match(edited, `EDITED ${summary}`, 'the edit is what runs')
  const after = await readdir(join(dir, '.cache', 'svc'))
  t.equal(after.filter((n) => !builds.includes(n) && n !== 'held').length, 1, 'from a new build')
  t.ok(after.includes(builds[0]!), 'the previous build, used today, is kept')
  t.ok(after.includes('held'), 'an old build a live process holds is kept')
  t.notOk(after.includes('stale'), 'an old build nobody holds is removed')
})

t.test('a checkout whose cache cannot be written runs through tsx', async (t) => {
  const dir = await makeTempDir(t, 'svc-bin-ro-')
  await copyCheckout(dir)
  // A file where the cache folder would be: no folder can be made there, whoever runs the test (root ignores modes).
  await writeFile(join(dir, '.cache'), '')
  const out = await svc(dir, ['--help'])
  t.match(out, /no bundle [\s\S]*running the sources through tsx/, 'said with SVC_DEBUG_BUNDLE')
  t.match(out, /Usage: svc <command> \[options\]/, 'and the help printed')
})
