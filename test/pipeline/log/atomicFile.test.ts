import t from 'tap'
import { readdir, readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { AtomicFileWriter } from '../../../pipeline/log/atomicFile.ts'
import { DATA_FILE_MODE } from '../../../pipeline/log/dataModes.ts'
import { makeTempDir } from '../../helpers/tmp.ts'

t.test('AtomicFileWriter: chunks land in a temp file as written; commit replaces the target, abort leaves it', async (t) => {
  const dir = await makeTempDir(t)
  const path = join(dir, 'f')
  await writeFile(path, 'old')
  const w = AtomicFileWriter.openSync(path)
  w.writeSync(Buffer.from('ne'))
  w.writeSync(Buffer.from('w'))
  const [tmp] = (await readdir(dir)).filter((f) => f.includes('.tmp-'))
  t.equal((await readFile(join(dir, tmp!), 'utf8')), 'new', 'written through before commit')
  t.equal(await readFile(path, 'utf8'), 'old', 'the target is untouched until commit')
  await w.commit()
  t.equal(await readFile(path, 'utf8'), 'new')
  t.equal((await stat(path)).mode & 0o777, DATA_FILE_MODE, 'data file mode')
  t.throws(() => w.writeSync(Buffer.from('x')), /over/, 'no write after commit')

  const a = AtomicFileWriter.openSync(path)
  a.writeSync(Buffer.from('partial'))
  a.abort()
  t.equal(await readFile(path, 'utf8'), 'new', 'abort leaves the target')
  t.same((await readdir(dir)).filter((f) => f.includes('.tmp-')), [], 'and no temp file')
})
