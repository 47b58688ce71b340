/**
 * The journals' views are generated from their definitions: sql/002_journals.sql is exactly what the definitions
 * render (regenerate with `svc docs sql`), and each definition's table carries every record field.
 */
import t from 'tap'
import { readFile } from 'node:fs/promises'
import { JOURNAL_VIEWS_PATH, renderJournalViews } from '../../sql/journalViews.ts'
import { JOURNALS } from '../../pipeline/sinks/sinkTables.ts'

t.test('sql/002_journals.sql is the one the journal definitions generate', async (t) => {
  t.equal(await readFile(JOURNAL_VIEWS_PATH, 'utf8'), renderJournalViews(), 'run `svc docs sql` to regenerate it')
})

t.test("every record field is a column of its journal's table (or its partition, or flattened, or the version)", async (t) => {
  for (const j of JOURNALS) {
    const columns = new Set(j.columns.map((c) => c.name))
    for (const field of Object.keys(j.schema.properties)) {
      const held =
        columns.has(field) ||
        field === j.table.assetField ||
        field === j.table.version?.field ||
        Object.keys(j.table.flatten?.[field as never] ?? {}).every((c) => columns.has(c)) && j.table.flatten?.[field as never] !== undefined
      t.ok(held, `${j.name}.${field} is stored`)
    }
    t.ok(j.viewsSql().includes(`CREATE OR REPLACE VIEW ${j.table.rows} AS`), `${j.name} has its rows view`)
  }
})
