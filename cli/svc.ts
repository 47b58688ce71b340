/**
 * `svc`: the one CLI. Subcommands are discovered from cli/commands/*.ts, so there is no second list to keep.
 */
import { readdir } from 'node:fs/promises'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { join } from 'node:path'
import { UsageError, type Command } from './Command.ts'
import { configErrorLine, loggingFromEnv } from '../app/config.ts'
import { CodedError } from '../common/CodedError.ts'
import { configureLogging } from '../common/logger.ts'
import { OptionsError } from '../common/validation.ts'

const COMMANDS_DIR = fileURLToPath(new URL('./commands/', import.meta.url))
/**
 * The folder of the bundled command modules when bin/svc.js runs the bundle (start-up time, issue 31): the commands
 * are still discovered by reading COMMANDS_DIR, and each is imported from the bundle, which holds one module per source.
 */
const COMPILED_COMMANDS = (globalThis as { [key: symbol]: unknown })[Symbol.for('svc.compiledCommands')] as string | undefined

async function loadModule(file: string): Promise<Command[]> {
  const url = COMPILED_COMMANDS ? new URL(file.replace(/\.ts$/, '.mjs'), COMPILED_COMMANDS).href : pathToFileURL(join(COMMANDS_DIR, file)).href
  const mod = (await import(url)) as { command?: Command; commands?: Command[] }
  return [...(mod.command ? [mod.command] : []), ...(mod.commands ?? [])]
}

/** Every command (for --help): imports every module, so only the listing pays for all of them. */
async function loadCommands(): Promise<Command[]> {
  const files = (await readdir(COMMANDS_DIR)).filter((f) => f.endsWith('.ts')).sort()
  const found: Command[] = []
  for (const file of files) found.push(...(await loadModule(file)))
  return found.sort((a, b) => a.name.localeCompare(b.name))
}

/**
 * The modules that may hold the command `argv` names: a command's file is its words joined by '-', or a prefix of
 * them ('tape import' → tape-import.ts; 'docs errors' → docs.ts). Only those are imported, so a light command does
 * not load the engine and the server just to start.
 */
async function candidateCommands(argv: string[]): Promise<Command[]> {
  const files = new Set((await readdir(COMMANDS_DIR)).filter((f) => f.endsWith('.ts')))
  const found: Command[] = []
  for (let n = Math.min(argv.length, 3); n >= 1; n--) {
    const file = `${argv.slice(0, n).join('-')}.ts`
    if (files.has(file)) found.push(...(await loadModule(file)))
  }
  return found
}

/** The help of `svc` (group []) or of a group of commands such as `svc release` (group ['release']). */
/**
 * The modules that may hold commands of a group starting with argv's first word ('release' → release.ts; 'tape' →
 * tape-generate.ts, tape-import.ts, …; 'docs' → docs.ts, docs-env.ts); every module when none does, so an unknown word
 * still lists every command.
 */
async function groupCandidates(argv: string[]): Promise<Command[]> {
  const first = argv[0] ?? ''
  const files = (await readdir(COMMANDS_DIR)).filter((f) => f === `${first}.ts` || f.startsWith(`${first}-`)).sort()
  const found: Command[] = []
  for (const file of files) found.push(...(await loadModule(file)))
  return found.some((c) => c.name.split(' ')[0] === first) ? found.sort((a, b) => a.name.localeCompare(b.name)) : loadCommands()
}

function help(commands: Command[], group: string[] = []): string {
  const width = Math.max(...commands.map((c) => c.name.length), 4)
  const prefix = ['svc', ...group].join(' ')
  return [
    `Usage: ${prefix} <command> [options]`,
    '',
    'Commands:',
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    `Run \`${prefix} <command> --help\` for a command's options.`,
  ].join('\n')
}

/**
 * The longest leading words of argv that name a group: the first words of at least one command ('release' for
 * 'release build'), read from the one command table. Empty when even the first word names none.
 */
function groupOf(commands: Command[], argv: string[]): { group: string[]; members: Command[] } {
  for (let n = argv.length; n >= 1; n--) {
    const group = argv.slice(0, n)
    const members = commands.filter((c) => {
      const words = c.name.split(' ')
      return words.length > n && group.every((w, i) => words[i] === w)
    })
    if (members.length > 0) return { group, members }
  }
  return { group: [], members: commands }
}

async function main(argv: string[]): Promise<number> {
  // Before any command module is loaded: the loggers they make at load time take these settings.
  try {
    configureLogging(loggingFromEnv(process.env))
  } catch (err) {
    if (err instanceof OptionsError) {
      process.stderr.write(`svc: ${configErrorLine(err)}\n`)
      return 2
    }
    throw err
  }
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help') {
    process.stdout.write(help(await loadCommands()) + '\n')
    return argv.length === 0 ? 2 : 0
  }
  // Longest match first: 'tape import' before 'tape'.
  const matches = (commands: Command[]) =>
    [...commands]
      .sort((a, b) => b.name.split(' ').length - a.name.split(' ').length)
      .find((c) => c.name.split(' ').every((w, i) => argv[i] === w))
  const match = matches(await candidateCommands(argv))
  if (!match) {
    // `svc release` alone (or with --help) is the help of its group; anything else unknown names itself, then the
    // help of the nearest group it starts with (all commands when none).
    const words = argv.filter((a) => a !== '--help' && a !== '-h')
    const { group, members } = groupOf(await groupCandidates(words), words)
    if (group.length > 0 && group.length === words.length) {
      process.stdout.write(help(members, group) + '\n')
      return words.length === argv.length ? 2 : 0
    }
    process.stderr.write(`svc: unknown command '${argv.join(' ')}'\n\n${help(members, group)}\n`)
    return 2
  }
  const rest = argv.slice(match.name.split(' ').length)
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(match.usage.trimEnd() + '\n')
    return 0
  }
  try {
    return await match.run(rest)
  } catch (err) {
    if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`svc ${match.name}: ${(err as Error).message}\n\n${match.usage.trimEnd()}\n`)
      return 2
    }
    // A bad environment: one line naming every bad variable, no stack trace.
    if (err instanceof OptionsError) {
      process.stderr.write(`svc ${match.name}: ${configErrorLine(err)}\n`)
      return 2
    }
    // A typed refusal (a locked data folder, an unreachable broker): its code and message say it all.
    if (err instanceof CodedError) {
      process.stderr.write(`svc ${match.name}: ${err.code}: ${err.message}\n`)
      return 1
    }
    throw err
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code
  },
  (err: unknown) => {
    process.stderr.write(`svc: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
    process.exitCode = 1
  },
)
