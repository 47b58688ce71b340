/** The shipped source files (test/ excluded), for checks that read the code as text. */
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'

const ROOT = new URL('../../', import.meta.url).pathname

/** The folders whose code ships (test/ may keep its own independent checkers). */
const SOURCE_FOLDERS = ['common', 'ingest', 'pipeline', 'models', 'engine', 'sql', 'record', 'product', 'serving', 'app', 'cli', 'bin', 'bench']

/** Every .ts/.js/.mjs source as [path relative to the repository, text]. */
export async function sourceTexts(): Promise<Array<[file: string, text: string]>> {
  const out: Array<[string, string]> = []
  for (const folder of SOURCE_FOLDERS) {
    const entries = await readdir(join(ROOT, folder), { recursive: true }).catch(() => [] as string[])
    for (const entry of entries) {
      if (!/\.(ts|js|mjs)$/.test(entry) || entry.split('/').includes('node_modules')) continue
      const file = `${folder}/${entry}`
      out.push([file, await readFile(join(ROOT, file), 'utf8')])
    }
  }
  return out
}
