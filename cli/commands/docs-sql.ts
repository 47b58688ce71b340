/**
 * `svc docs sql`: writes sql/002_journals.sql from the journal definitions (--check: exit 1 when the file is stale).
 */
import { readFile, writeFile } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import type { Command } from '../Command.ts'
import { JOURNAL_VIEWS_PATH, renderJournalViews } from '../../sql/journalViews.ts'

const usage = `Usage: svc docs sql [--check]

Regenerates sql/002_journals.sql (the views of every journal) from pipeline/records/*.ts.

Options:
  --check   do not write; exit 1 when sql/002_journals.sql differs from the definitions
`

export const command: Command = {
  name: 'docs sql',
  summary: 'Generate the journal views (sql/002_journals.sql) from the record definitions (--check for drift)',
  usage,
  async run(argv) {
    const { values } = parseArgs({ args: argv, options: { check: { type: 'boolean', default: false } }, strict: true })
    const want = renderJournalViews()
    if (values.check) {
      const have = await readFile(JOURNAL_VIEWS_PATH, 'utf8').catch(() => '')
      if (have !== want) {
        process.stderr.write(`${JOURNAL_VIEWS_PATH} is stale: run \`svc docs sql\`\n`)
        return 1
      }
      process.stdout.write(`${JOURNAL_VIEWS_PATH} is up to date\n`)
      return 0
    }
    await writeFile(JOURNAL_VIEWS_PATH, want)
    process.stdout.write(`wrote ${JOURNAL_VIEWS_PATH}\n`)
    return 0
  },
}
