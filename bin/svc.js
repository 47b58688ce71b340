#!/usr/bin/env node
/**
 * Runs the TypeScript CLI with no build step between a checkout and `svc`, from a bundle when it can.
 *
 * Loading ~400 TypeScript files through tsx's loader took half of `svc start`'s time to its first log line (issue 31,
 * bench/startup.ts). So the CLI (cli/svc.ts and every cli/commands/*.ts as entries, shared code split into chunks,
 * packages left to node) is bundled by esbuild into .cache/svc/<key>/, where key is a hash of every source file
 * (.ts and .json of the layer folders), tsconfig.json, this file, the checkout's path and the node and esbuild versions:
 * a source edited is a new key, so a stale bundle is never run. The first run after a change builds it (about a
 * second); later runs import it. If anything about the bundle fails (a read-only checkout, a build error), the sources
 * run through tsx as before; SVC_NO_BUNDLE=1 asks for tsx.
 *
 * In the bundle each module's import.meta.url is its source file's URL, so code that finds files beside itself
 * (sql/*.sql, docs, cli/commands discovery, the bootstrap worker, which loads its own source through tsx) finds the
 * same files as under tsx. The bundle sits inside the checkout so node resolves packages (and import.meta.resolve)
 * from the same node_modules.
 */
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const ROOT = fileURLToPath(new URL('../', import.meta.url))
/** The layer folders (README, The house) and peers/: everything cli/ can import. */
const SOURCE_DIRS = ['common', 'ingest', 'pipeline', 'models', 'engine', 'sql', 'record', 'product', 'serving', 'app', 'cli', 'peers']
const CACHE = join(ROOT, '.cache', 'svc')
/** A build no start has used for this long is removed when a new one is made (unless a live process holds it). */
const PRUNE_AFTER_MS = 7 * 24 * 3600_000
/** Where cli/svc.ts finds the bundled command modules (it imports the .ts sources when this is unset). */
const COMPILED_COMMANDS = Symbol.for('svc.compiledCommands')

function sourceFiles(dir, out) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, e.name)
    if (e.isDirectory()) sourceFiles(path, out)
    else if (e.name.endsWith('.ts') || e.name.endsWith('.json')) out.push(path)
  }
  return out
}

function keyOf(esbuildVersion) {
  const hash = createHash('sha256').update(`${ROOT}\0${process.versions.node}\0${esbuildVersion}\0`)
  const files = [fileURLToPath(import.meta.url), join(ROOT, 'tsconfig.json'), ...SOURCE_DIRS.flatMap((d) => sourceFiles(join(ROOT, d), [])).sort()]
  for (const file of files) hash.update(file).update('\0').update(readFileSync(file)).update('\0')
  return hash.digest('hex').slice(0, 32)
}

/** Replaces import.meta.url by the source file's URL (see above); otherwise what tsx does to a file. */
const sourceUrls = {
  name: 'source-import-meta-url',
  setup(build) {
    build.onLoad({ filter: /\.ts$/ }, (args) => {
      if (args.path.includes('/node_modules/')) return undefined
      const text = readFileSync(args.path, 'utf8').replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href))
      return { contents: text, loader: 'ts' }
    })
  },
}

async function build(esbuild, dir) {
  const tmp = `${dir}.tmp-${process.pid}`
  rmSync(tmp, { recursive: true, force: true })
  const commands = readdirSync(join(ROOT, 'cli', 'commands')).filter((f) => f.endsWith('.ts')).map((f) => join(ROOT, 'cli', 'commands', f))
  await esbuild.build({
    entryPoints: [join(ROOT, 'cli', 'svc.ts'), ...commands],
    outbase: ROOT,
    outdir: tmp,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: `node${process.versions.node}`,
    packages: 'external',
    // As tsx: class and function names stay what the source says (errors name themselves by constructor name).
    keepNames: true,
    sourcemap: 'linked',
    tsconfig: join(ROOT, 'tsconfig.json'),
    plugins: [sourceUrls],
    logLevel: 'silent',
  })
  try {
    renameSync(tmp, dir)
  } catch (err) {
    // Another svc built the same key first: theirs is identical.
    rmSync(tmp, { recursive: true, force: true })
    if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory()) throw err
  }
  prune(dir)
}

const alive = (pid) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return err.code === 'EPERM'
  }
}

/** Removes builds unused for PRUNE_AFTER_MS that no live process holds (a running one may still import a lazy chunk). */
function prune(keep) {
  for (const name of readdirSync(CACHE)) {
    const dir = join(CACHE, name)
    if (dir === keep) continue
    try {
      const stale = Date.now() - statSync(dir).mtimeMs > PRUNE_AFTER_MS
      // No pids folder: a build that crashed half way (its .tmp-<pid> folder) or was never run.
      const pids = statSync(join(dir, 'pids'), { throwIfNoEntry: false }) ? readdirSync(join(dir, 'pids')) : []
      const held = pids.some((pid) => alive(Number(pid)))
      if (stale && !held) rmSync(dir, { recursive: true, force: true })
    } catch {
      // A build in progress or half removed by another svc: left alone.
    }
  }
}

/** The bundle's directory for the current sources, built if missing; null when it cannot be had. */
async function bundle() {
  if (process.env.SVC_NO_BUNDLE === '1') return null
  try {
    // The version from its package.json: esbuild itself is loaded only to build.
    const dir = join(CACHE, keyOf(createRequire(import.meta.url)('esbuild/package.json').version))
    if (!statSync(join(dir, 'cli', 'svc.mjs'), { throwIfNoEntry: false })) {
      mkdirSync(CACHE, { recursive: true })
      await build(await import('esbuild'), dir)
    }
    // Held while this process runs (prune skips it); the mtime says when a start last used it.
    mkdirSync(join(dir, 'pids'), { recursive: true })
    writeFileSync(join(dir, 'pids', String(process.pid)), '')
    process.on('exit', () => rmSync(join(dir, 'pids', String(process.pid)), { force: true }))
    const now = new Date()
    utimesSync(dir, now, now)
    return dir
  } catch (err) {
    if (process.env.SVC_DEBUG_BUNDLE === '1') process.stderr.write(`svc: no bundle (${err.stack ?? err}), running the sources through tsx\n`)
    return null
  }
}

const dir = await bundle()
if (dir) {
  globalThis[COMPILED_COMMANDS] = pathToFileURL(join(dir, 'cli', 'commands') + '/').href
  await import(pathToFileURL(join(dir, 'cli', 'svc.mjs')).href)
} else {
  const { register } = await import('tsx/esm/api')
  register()
  await import('../cli/svc.ts')
}
