/**
 * `svc <group>` alone prints that group's help (issue 33 item 7: `svc release` said "unknown command"), for every
 * group of the one command table: the groups are read from `svc --help` here, so a new group is covered unasked.
 */
import t from 'tap'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'

const exec = promisify(execFile)
const SVC = new URL('../../bin/svc.js', import.meta.url).pathname

async function svc(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await exec(process.execPath, [SVC, ...args], { env: { ...process.env, CI: 'true' } })
    return { code: 0, stdout: r.stdout, stderr: r.stderr }
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string }
    return { code: e.code, stdout: e.stdout, stderr: e.stderr }
  }
}

/** `name  summary` rows of a help text's command list. */
const rowsOf = (text: string): string[] => text.split('\n').filter((l) => l.startsWith('  ')).map((l) => l.trim().split(/\s{2,}/)[0]!)

t.test('every group alone prints its own help: its commands, nothing else', async (t) => {
  const top = await svc(['--help'])
  t.equal(top.code, 0)
  const names = rowsOf(top.stdout)
  const groups = [...new Set(names.filter((n) => n.includes(' ')).map((n) => n.split(' ')[0]!))]
  t.ok(groups.includes('release') && groups.includes('tape'), `groups: ${groups.join(', ')}`)
  // One process per group, side by side (each loads only its group's modules).
  const answers = await Promise.all(groups.map((group) => svc([group])))
  for (const [i, group] of groups.entries()) {
    const r = answers[i]!
    t.equal(r.stderr, '', `svc ${group}: no "unknown command"`)
    t.equal(r.code, 2, `svc ${group}: exits 2 like \`svc\` alone (no command ran)`)
    t.match(r.stdout, new RegExp(`^Usage: svc ${group} <command> \\[options\\]\\n`))
    t.same(rowsOf(r.stdout), names.filter((n) => n.startsWith(`${group} `)), `svc ${group}: exactly its commands`)
    t.match(r.stdout, `Run \`svc ${group} <command> --help\``)
  }
  const asked = await svc(['release', '--help'])
  t.equal(asked.code, 0, 'asked for (--help): exit 0')
  t.match(asked.stdout, /^Usage: svc release <command>/)
})

t.test('an unknown word inside a group names itself, then that group\'s help; one outside any, the whole list', async (t) => {
  const inGroup = await svc(['release', 'bogus'])
  t.equal(inGroup.code, 2)
  t.match(inGroup.stderr, /^svc: unknown command 'release bogus'\n\nUsage: svc release <command>/)
  t.notMatch(inGroup.stderr, /tape generate/, 'only the group')
  const outside = await svc(['bogus'])
  t.equal(outside.code, 2)
  t.match(outside.stderr, /^svc: unknown command 'bogus'\n\nUsage: svc <command> \[options\]/)
  t.match(outside.stderr, /tape generate/)
  t.match((await svc(['start', '--help'])).stdout, /^Usage: svc start/, 'a command\'s own --help is unchanged')
})
