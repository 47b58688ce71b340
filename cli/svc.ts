/**
 * `svc`: the one CLI. Subcommands are discovered from cli/commands/*.ts, so there is no second list to keep.
 */
import { readdir } from 'node:fs/promises'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { join } from 'node:path'
import { UsageError, type Command } from './Command.ts'

async function loadCommands(): Promise<Command[]> {
  const dir = fileURLToPath(new URL('./commands/', import.meta.url))
  const files = (await readdir(dir)).filter((f) => f.endsWith('.ts')).sort()
  const found: Command[] = []
  for (const file of files) {
    const mod = (await import(pathToFileURL(join(dir, file)).href)) as { command?: Command; commands?: Command[] }
    if (mod.command) found.push(mod.command)
    if (mod.commands) found.push(...mod.commands)
  }
  return found.sort((a, b) => a.name.localeCompare(b.name))
}

function help(commands: Command[]): string {
  const width = Math.max(...commands.map((c) => c.name.length), 4)
  return [
    'Usage: svc <command> [options]',
    '',
    'Commands:',
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'Run `svc <command> --help` for a command\'s options.',
  ].join('\n')
}

async function main(argv: string[]): Promise<number> {
  const commands = await loadCommands()
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help') {
    process.stdout.write(help(commands) + '\n')
    return argv.length === 0 ? 2 : 0
  }
  // Longest match first: 'tape import' before 'tape'.
  const byLength = [...commands].sort((a, b) => b.name.split(' ').length - a.name.split(' ').length)
  const match = byLength.find((c) => {
    const words = c.name.split(' ')
    return words.every((w, i) => argv[i] === w)
  })
  if (!match) {
    process.stderr.write(`svc: unknown command '${argv.join(' ')}'\n\n${help(commands)}\n`)
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
