/**
 * Tests that need an external tool (a PyPI package, a browser). CI installs every such tool (.ci/run), so a missing
 * one there is a broken install step and fails the run; on a developer's machine the test is skipped with the reason
 * and the install command.
 */
import { spawnSync } from 'node:child_process'

/** The `skip` option of the test: false when the tool is there; under CI=true a missing tool is a failure instead. */
export function skipUnlessTool(t: { fail(message: string): unknown }, missing: string | null, what: string): string | false {
  if (missing === null) return false
  if (process.env.CI === 'true') {
    t.fail(`CI=true requires ${what}: ${missing}`)
    return 'failed above'
  }
  return `skipped: ${missing}`
}

/** Null when `python -m <module> --version` runs, else why not (with the install hint). */
export function pythonModuleMissing(python: string, module: string, hint: string): string | null {
  const r = spawnSync(python, ['-m', module, '--version'], { encoding: 'utf8' })
  return r.status === 0 ? null : `${module} is not installed for ${python} (${hint})`
}

/** Null when `python -c 'import <module>'` succeeds for each module (libraries without a command line), else why not. */
export function pythonImportMissing(python: string, modules: readonly string[], hint: string): string | null {
  const r = spawnSync(python, ['-c', modules.map((m) => `import ${m}`).join('; ')], { encoding: 'utf8' })
  return r.status === 0 ? null : `${modules.join(', ')} cannot be imported by ${python} (${hint})`
}
