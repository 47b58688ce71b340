/**
 * `svc docs env`: writes README's environment table from the configuration schema (app/config.ts); --check exits 1
 * when README is stale (test/app/config.test.ts checks the same).
 */
import { readFile, writeFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import type { Command } from '../Command.ts'
import { ENV_TABLE_BEGIN, ENV_TABLE_END, renderEnvTable } from '../../app/config.ts'

const README = fileURLToPath(new URL('../../README.md', import.meta.url))

const usage = `Usage: svc docs env [--check]

Regenerates the environment table in README.md (between its generated-table markers) from app/config.ts.

Options:
  --check   do not write; exit 1 when README's table differs from the schema
`

export const command: Command = {
  name: 'docs env',
  summary: "Generate README's environment table from the configuration schema (--check for drift)",
  usage,
  async run(argv) {
    const { values } = parseArgs({ args: argv, options: { check: { type: 'boolean', default: false } }, strict: true })
    const readme = await readFile(README, 'utf8')
    const begin = readme.indexOf(ENV_TABLE_BEGIN)
    const end = readme.indexOf(ENV_TABLE_END)
    if (begin < 0 || end < begin) {
      process.stderr.write(`${README} has no generated-table markers (${ENV_TABLE_BEGIN} ... ${ENV_TABLE_END})\n`)
      return 1
    }
    const want = `${readme.slice(0, begin + ENV_TABLE_BEGIN.length)}\n${renderEnvTable()}\n${readme.slice(end)}`
    if (values.check) {
      if (want !== readme) {
        process.stderr.write(`${README}: the environment table is stale: run \`svc docs env\`\n`)
        return 1
      }
      process.stdout.write(`${README}: the environment table is up to date\n`)
      return 0
    }
    await writeFile(README, want)
    process.stdout.write(`wrote the environment table in ${README}\n`)
    return 0
  },
}
