/**
 * `svc release …` end to end on a generated tape: build, evaluate (gate rows sealed; a second run writes nothing),
 * list and show, one-line typed refusals without a stack trace, and options checked by the one Ajv helper.
 */
import t from 'tap'
import { execFile } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { jcsSha256 } from '../../../common/hash.ts'
import { tickLine } from '../../../ingest/Tick.ts'
import { makeTempDir } from '../../helpers/tmp.ts'
import { mergeTicks, syntheticBars } from '../../helpers/ticks.ts'

const exec = promisify(execFile)
const SVC = new URL('../../../bin/svc.js', import.meta.url).pathname

async function svc(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await exec('node', [SVC, ...args], { env: { ...process.env, CI: 'true', LOG_FORMAT: 'json', ...env } })
    return { code: 0, stdout: r.stdout, stderr: r.stderr }
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string }
    return { code: e.code, stdout: e.stdout, stderr: e.stderr }
  }
}

t.test('svc release build / evaluate / list / show / activate', async (t) => {
  const dir = await makeTempDir(t, 'svc-release-cli-')
  const tape = join(dir, 'gen.ndjson')
  await writeFile(tape, mergeTicks(syntheticBars('BTC', 40 * 24), syntheticBars('ETH', 40 * 24, 5)).map(tickLine).join('\n') + '\n')
  const data = join(dir, 'data')

  const built = await svc(['release', 'build', '--version', '1.0.0', '--method', 'v1', '--parent', 'none', '--tape', tape, '--window-end', '2025-01-30', '--questions', 'S01_market_regime,S05_volatility_expansion', '--data-dir', data, '--json'])
  t.equal(built.code, 0, 'build exits 0')
  const b = JSON.parse(built.stdout) as { checksum: string; body: unknown; dataset: { dataset_hash: string } }
  t.equal(b.checksum, jcsSha256(b.body))
  t.match(built.stderr, /"component":"release".*"stage":"label decisions"/, 'progress as pino lines off a TTY')

  const ev = await svc(['release', 'evaluate', '1.0.0', '--data-dir', data])
  t.equal(ev.code, 0, 'evaluate exits 0')
  // Off a TTY, evaluate's progress is pino JSON on stderr, one stage after the other; stdout stays the result alone.
  const evStages = ev.stderr.trim().split('\n').map((l) => JSON.parse(l) as { component?: string; stage?: string; done?: number; total?: number })
  t.ok(evStages.length > 0 && evStages.every((l) => l.component === 'release'), 'every stderr line of evaluate is a pino progress line')
  t.same([...new Set(evStages.map((l) => l.stage))], ['label decisions', 'refit', 'score'], 'evaluate reports labelling, the reproducibility refit and the holdout scoring')
  for (const s of ['label decisions', 'refit', 'score']) {
    const last = evStages.filter((l) => l.stage === s).at(-1)!
    t.equal(last.done, last.total, `${s}: its last line is the stage's end`)
  }
  t.notMatch(ev.stdout, /"component"/, 'no progress line on stdout')
  t.match(ev.stdout, /release 1\.0\.0: gate rows sealed/)
  for (const g of ['evidence', 'improvement', 'no_regression', 'reproducible']) t.match(ev.stdout, new RegExp(`(pass|FAIL)  ${g}`), `gate ${g}`)
  t.match(ev.stdout, /pass  reproducible/)
  t.match(ev.stdout, /fold 4 /)

  const again = await svc(['release', 'evaluate', '1.0.0', '--data-dir', data])
  t.match(again.stdout, /evaluated before \(nothing written\); re-measured: identical/)

  const list = await svc(['release', 'list', '--data-dir', data, '--json'])
  const items = (JSON.parse(list.stdout) as { releases: Array<{ version: string; status: string; gates: Array<{ met: boolean }> }> }).releases
  t.equal(items.length, 1)
  const passed = items[0]!.gates.every((g) => g.met)
  t.equal(items[0]!.status, passed ? 'candidate' : 'rejected')

  const show = await svc(['release', 'show', '1.0.0', '--data-dir', data])
  const bundle = JSON.parse(show.stdout) as { checksum: string; body: unknown; families: Record<string, unknown> }
  t.equal(bundle.checksum, b.checksum)
  t.same(Object.keys(bundle.families).sort(), ['S01_market_regime', 'S05_volatility_expansion'])

  const act = await svc(['release', 'activate', '1.0.0', '--data-dir', data])
  if (passed) {
    t.equal(act.code, 0)
    const twice = await svc(['release', 'activate', '1.0.0', '--data-dir', data])
    t.equal(twice.code, 1)
    t.match(twice.stderr, /^svc release activate: ALREADY_ACTIVATED: /)
  } else {
    t.equal(act.code, 1)
    t.match(act.stderr, /^svc release activate: GATES_NOT_MET: release 1\.0\.0 failed /)
    t.equal(act.stderr.trim().split('\n').length, 1, 'one line, no stack trace')
  }

  const missing = await svc(['release', 'show', '7.0.0', '--data-dir', data])
  t.equal(missing.code, 1)
  t.equal(missing.stderr, 'svc release show: RELEASE_NOT_FOUND: no release 7.0.0\n')
  const rb = await svc(['release', 'rollback', '--data-dir', data])
  t.equal(rb.code, 1)
  t.match(rb.stderr, /^svc release rollback: (NO_ACTIVE_RELEASE|NO_PARENT): /)
})

/** Runs the CLI on a pseudo-terminal (util-linux `script`), so its stderr is a TTY; stdout and stderr come back merged. */
async function svcOnTty(args: string[]): Promise<{ code: number; output: string }> {
  const line = ['node', SVC, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ')
  const env: Record<string, string | undefined> = { ...process.env, LOG_FORMAT: 'json', TERM: 'xterm' }
  delete env.CI
  try {
    const r = await exec('script', ['-qec', line, '/dev/null'], { env })
    return { code: 0, output: r.stdout }
  } catch (err) {
    const e = err as { code: number; stdout: string }
    return { code: e.code, output: e.stdout }
  }
}

const hasScript = await exec('script', ['-qec', 'true', '/dev/null']).then(
  () => true,
  () => false,
)

t.test('on a TTY, build and evaluate draw a progress bar per stage instead of pino lines', { skip: hasScript ? false : 'util-linux script (a pseudo-terminal) is not available here' }, async (t) => {
  const dir = await makeTempDir(t, 'svc-release-tty-')
  const tape = join(dir, 'gen.ndjson')
  await writeFile(tape, syntheticBars('BTC', 40 * 24).map(tickLine).join('\n') + '\n')
  const data = join(dir, 'data')
  const built = await svcOnTty(['release', 'build', '--version', '1.0.0', '--method', 'v2', '--parent', 'none', '--tape', tape, '--window-end', '2025-01-30', '--questions', 'S05_volatility_expansion', '--data-dir', data])
  t.equal(built.code, 0, 'build exits 0 on a TTY')
  t.match(built.output, /release label decisions \[[^\]]*\] \d+% \| \d+\/\d+ ticks/, 'build: a bar while labelling')
  t.match(built.output, /release fit \[[^\]]*\] \d+% \| \d+\/1 families/, 'build: a bar while fitting')
  t.notMatch(built.output, /"component":"release"/, 'build: no pino progress lines on a TTY')
  t.match(built.output, /release 1\.0\.0 sealed as a candidate/)
  const ev = await svcOnTty(['release', 'evaluate', '1.0.0', '--data-dir', data])
  t.equal(ev.code, 0, 'evaluate exits 0 on a TTY')
  for (const [stage, unit] of [['label decisions', 'ticks'], ['refit', 'families'], ['score', 'families']] as const) {
    t.match(ev.output, new RegExp(`release ${stage} \\[[^\\]]*\\] \\d+% \\| \\d+/\\d+ ${unit}`), `evaluate: a bar for ${stage}`)
  }
  t.notMatch(ev.output, /"component":"release"/, 'evaluate: no pino progress lines on a TTY')
  t.match(ev.output, /release 1\.0\.0: gate rows sealed/)
})

t.test('bad options are usage errors (exit 2) in the one options-error format', async (t) => {
  const r = await svc(['release', 'build', '--version', '1.0', '--method', 'v3', '--dataset', 'abcdef12'])
  t.equal(r.code, 2)
  t.match(r.stderr, /options\/version: must be a version <major>\.<minor>\.<patch> such as 1\.2\.0/, 'in words, not a regular expression')
  t.match(r.stderr, /options\/method: /)
  t.match(r.stderr, /Usage: svc release build/)
  const s = await svc(['release', 'list', '--status', 'pending'])
  t.equal(s.code, 2)
  t.match(s.stderr, /options\/status/)
  const both = await svc(['release', 'build', '--version', '1.0.0', '--method', 'v1'])
  t.equal(both.code, 2)
  t.match(both.stderr, /give either --dataset or --tape/)
})
