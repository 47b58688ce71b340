/**
 * sql/002_journals.sql is generated from the journal definitions (pipeline/records/*: schema, table and views), so the
 * views of every append-only record are written once, where the record is. Regenerate with `svc docs sql`;
 * test/sql/journalViews.test.ts fails when the committed file and the definitions disagree.
 */
import { fileURLToPath } from 'node:url'
import { JOURNALS } from '../pipeline/sinks/sinkTables.ts'

export const JOURNAL_VIEWS_PATH = fileURLToPath(new URL('./002_journals.sql', import.meta.url))

export function renderJournalViews(): string {
  return [
    '-- Generated from the journal definitions (pipeline/records/*.ts) by `svc docs sql`; do not edit by hand.',
    '-- Append-only: nothing in the code base updates or deletes a journal row; these are views over sealed Parquet only.',
    '',
    ...JOURNALS.map((j) => j.viewsSql() + '\n'),
  ].join('\n')
}
