/**
 * A ServiceApp started in-process on a controlled present and run until /readyz answers 200 (test/app tests that stop
 * and restart the service on one data folder).
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { ServiceApp } from '../../app/ServiceApp.ts'
import { loadConfig } from '../../app/config.ts'

/** A present that moves with the wall clock from `startIso`, and jumps when told (a stop between two runs). */
export function controlledClock(startIso: string) {
  let offset = Date.parse(startIso) - Date.now()
  return { now: () => Date.now() + offset, jump: (ms: number) => void (offset += ms) }
}

export interface RunningApp {
  url: string
  /** The lines the app said on its console. */
  said: string[]
  stop(): Promise<void>
}

/** Starts the app with `env` over a quiet base (a free port, no record job), runs it and waits for /readyz 200. */
export async function startReadyApp(env: Record<string, string>, clock: { now(): number }, readyWithinMs = 180_000): Promise<RunningApp> {
  const said: string[] = []
  const config = loadConfig({ PORT: '0', SVC_RECORD_INTERVAL_S: '0', LOG_LEVEL: 'warn', ...env })
  const app = await ServiceApp.start(config, (line) => void said.push(line), { clock })
  const abort = new AbortController()
  const running = app.run(abort.signal)
  const deadline = Date.now() + readyWithinMs
  while ((await fetch(app.server.url + '/readyz')).status !== 200) {
    if (Date.now() > deadline) throw new Error(`/readyz did not answer 200 in time:\n${said.join('\n')}`)
    await sleep(100)
  }
  return {
    url: app.server.url,
    said,
    stop: async () => {
      abort.abort()
      await app.server.close()
      await running
      await app.close()
    },
  }
}
