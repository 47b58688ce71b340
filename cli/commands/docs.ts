/**
 * `svc docs errors`: writes docs/errors.md from the error registry (--check: exit 1 when the file is stale).
 */
import { readFile, writeFile } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import type { Command } from '../Command.ts'
import { ERRORS_DOC_PATH, renderErrorsDoc } from '../../serving/docs/errorsDoc.ts'

const usage = `Usage: svc docs errors [--check]

Regenerates docs/errors.md from common/errors.ts.

Options:
  --check   do not write; exit 1 when docs/errors.md differs from the registry
`

export const command: Command = {
  name: 'docs errors',
  summary: 'Generate docs/errors.md from the error registry (--check for drift)',
  usage,
  async run(argv) {
    const { values } = parseArgs({ args: argv, options: { check: { type: 'boolean', default: false } }, strict: true })
    const want = renderErrorsDoc()
    if (values.check) {
      const have = await readFile(ERRORS_DOC_PATH, 'utf8').catch(() => '')
      if (have !== want) {
        process.stderr.write(`${ERRORS_DOC_PATH} is stale: run \`svc docs errors\`\n`)
        return 1
      }
      process.stdout.write(`${ERRORS_DOC_PATH} is up to date\n`)
      return 0
    }
    await writeFile(ERRORS_DOC_PATH, want)
    process.stdout.write(`wrote ${ERRORS_DOC_PATH}\n`)
    return 0
  },
}
