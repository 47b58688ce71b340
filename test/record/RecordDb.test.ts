import t from 'tap'
import { RecordDb } from '../../record/RecordDb.ts'
import { makeTempDir } from '../helpers/tmp.ts'

t.test("the record's DuckDB keeps no second copy of the local Parquet it reads (issue 31: the OS page cache holds it)", async (t) => {
  const db = await RecordDb.open(await makeTempDir(t, 'svc-recorddb-'))
  t.teardown(() => db.close())
  const [row] = await db.query(`SELECT current_setting('enable_external_file_cache') AS cache`)
  t.equal(row!.cache, false, 'external file cache off')
})
