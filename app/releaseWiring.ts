/**
 * What the engine serves, wired the same way for `svc start` and `svc pipeline run`: the release store's active
 * release loaded before the first decision, followed while running (record/releases/ReleaseFollower.ts: `svc release
 * activate | rollback` in another process switch it within a second), and the bootstrap release built at the training
 * cut when the data folder has none active and SVC_BOOTSTRAP_RELEASE is on (record/releases/bootstrap.ts).
 */
import type { EngineRunner, EngineRunnerOptions } from '../engine/EngineRunner.ts'
import type { ServedRelease } from '../engine/ServedRelease.ts'
import type { EventLog } from '../pipeline/log/EventLog.ts'
import { bootstrapRelease, BOOTSTRAP_VERSION } from '../record/releases/bootstrap.ts'
import { ReleaseFollower } from '../record/releases/ReleaseFollower.ts'
import type { ReleaseStore } from '../record/releases/ReleaseStore.ts'
import { startProgress, type Progress } from '../common/progress.ts'
import { progressOf, type AppConfig } from './config.ts'

export interface ReleaseWiring {
  readonly follower: ReleaseFollower
  /** The engine's start options: the release in force, and the bootstrap at the cut. */
  engineOptions(): Pick<EngineRunnerOptions, 'release' | 'atCut'>
  /** Switches go to `runner` from now on (and one that came while it opened is applied). */
  attach(runner: EngineRunner): Promise<void>
  /** Called after each switch (e.g. the record drops its read cache). */
  onSwitch(listener: (release: ServedRelease) => void): void
  close(): Promise<void>
}

export async function openReleaseWiring(o: { releases: ReleaseStore; eventLog: EventLog; ticksTopic: string; config: AppConfig; say: (line: string) => void }): Promise<ReleaseWiring> {
  let runner: EngineRunner | null = null
  const listeners: Array<(release: ServedRelease) => void> = []
  const stopping = new AbortController()
  const follower = await ReleaseFollower.start({
    store: o.releases,
    serve: async (r) => runner?.useRelease(r),
    onSwitch: (r) => listeners.forEach((l) => l(r)),
  })
  return {
    follower,
    engineOptions: () => ({
      release: follower.current,
      atCut: async (cut, signal) => {
        const both = AbortSignal.any([signal, stopping.signal])
        try {
          if (o.config.SVC_BOOTSTRAP_RELEASE === 'on') await runBootstrap({ ...o, cut, signal: both })
        } catch (err) {
          if (both.aborted) return // stopping: the next start resumes the bootstrap where it stood
          throw err
        }
        await follower.check() // before the engine decides past the cut
      },
    }),
    attach: async (r) => {
      runner = r
      if (r.engine.release !== follower.current) await r.useRelease(follower.current)
    },
    onSwitch: (l) => void listeners.push(l),
    close: () => {
      stopping.abort() // a bootstrap in progress stops at its next step
      return follower.stop()
    },
  }
}

/**
 * The bootstrap release at the training cut (record/releases/bootstrap.ts), told to the newcomer as the lifecycle it
 * is: build, evaluate against the base rate, activate only if the four gates pass.
 */
async function runBootstrap(o: { releases: ReleaseStore; eventLog: EventLog; ticksTopic: string; cut: number; config: AppConfig; say: (line: string) => void; signal: AbortSignal }): Promise<void> {
  let bar: Progress | null = null
  let stage = ''
  const outcome = await bootstrapRelease({
    store: o.releases,
    log: o.eventLog,
    ticksTopic: o.ticksTopic,
    cut: o.cut,
    signal: o.signal,
    onProgress: (s, done, total) => {
      if (s !== stage) {
        bar?.stop()
        stage = s
        bar = startProgress(`svc: release ${BOOTSTRAP_VERSION}: ${s}`, total, s === 'read the training window' || s === 'label decisions' ? 'ticks' : 'families', progressOf(o.config))
        if (s === 'read the training window') o.say(`svc: release   no active release: building ${BOOTSTRAP_VERSION} from the training window up to ${new Date(o.cut).toISOString()} (svc release build → evaluate → activate; SVC_BOOTSTRAP_RELEASE=off to activate your own)`)
      }
      bar!.setTotal(total)
      bar!.update(done)
    },
  })
  ;(bar as Progress | null)?.stop()
  if (outcome.status === 'activated') {
    const ci = outcome.delta_brier_ci
    o.say(`svc: release   ${outcome.version} activated by its gates (holdout delta Brier vs the base rate ${outcome.delta_brier?.toFixed(5)}${ci ? ` [${ci[0].toFixed(5)}, ${ci[1].toFixed(5)}]` : ''}; svc release show ${outcome.version})`)
  } else if (outcome.status === 'rejected') {
    o.say(`svc: release   ${outcome.version} rejected by its gates (${outcome.failed.map((f) => `${f.gate}: ${f.reason}`).join('; ')}): nothing is sold until a release is activated`)
  } else if (outcome.active === null) o.say(`svc: release   none active (${outcome.reason}): sold market questions refuse no_active_release`)
}

