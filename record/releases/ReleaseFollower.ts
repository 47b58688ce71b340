/**
 * The running service follows the release activations: at start it loads the active release (the sealed body and
 * the checksum sealed beside it) and hands it to the engine; then it watches the activation files, and when
 * `svc release activate` or `svc release rollback` (another process) seals a new activation row, it loads the newly
 * active release and switches the engine to it within one poll interval. No restart; one switch at a time (checks
 * never overlap); an ask already composing finishes on the release it read (engine/ServedRelease.ts).
 *
 * What the engine is given is verified there (checksum, each family's content hash); a tampered body is refused
 * family by family with the reason, never served and never replaced by a fit.
 */
import { childLogger } from '../../common/logger.ts'
import { PeriodicTask } from '../../common/PeriodicTask.ts'
import { ServedRelease, type SealedRelease } from '../../engine/ServedRelease.ts'
import type { ReleaseStore } from './ReleaseStore.ts'

const log = childLogger('release-follower')

/** How often the activation files are listed (a directory listing; the rows are read only when it changed). */
export const RELEASE_POLL_MS = 1_000

export interface ReleaseFollowerOptions {
  store: ReleaseStore
  /** Switches what is served (EngineRunner.useRelease). */
  serve: (release: ServedRelease) => Promise<void>
  /** Called after a switch (e.g. the record's read cache is dropped so active_release shows it at once). */
  onSwitch?: (release: ServedRelease) => void
  intervalMs?: number
}

/** The active release as the engine is given it: none, or its sealed body and the checksum sealed beside it. */
export async function activeSealedRelease(store: ReleaseStore): Promise<SealedRelease | null> {
  const active = await store.activeRelease()
  if (!active) return null
  const sealed = await store.body(active.version)
  if (!sealed) return null
  return { version: active.version, checksum: sealed.checksum, body: sealed.body as unknown as SealedRelease['body'] }
}

export class ReleaseFollower {
  private stamp: string | null = null
  private served: ServedRelease = ServedRelease.none()
  private readonly task: PeriodicTask

  private constructor(private readonly o: ReleaseFollowerOptions) {
    this.task = new PeriodicTask({ name: 'release-follower', intervalMs: o.intervalMs ?? RELEASE_POLL_MS, run: () => this.check() })
  }

  /** Loads and serves the active release (awaited: nothing is served before it), then follows activations. */
  static async start(o: ReleaseFollowerOptions): Promise<ReleaseFollower> {
    const follower = new ReleaseFollower(o)
    await follower.check()
    follower.task.start()
    return follower
  }

  /** The release in force. */
  get current(): ServedRelease {
    return this.served
  }

  /**
   * Lists the activation files; when they changed, loads the active release and switches to it if it differs. Calls
   * queue behind each other (the poll and a caller such as the bootstrap): one switch at a time.
   */
  check(): Promise<ServedRelease> {
    if (this.stopped) return Promise.resolve(this.served) // the store may be closed: the release in force stays
    const next = this.checking.then(() => this.checkOnce())
    this.checking = next.catch(() => undefined)
    return next
  }

  private checking: Promise<unknown> = Promise.resolve()

  private async checkOnce(): Promise<ServedRelease> {
    const stamp = await this.o.store.activationsStamp()
    if (stamp === this.stamp) return this.served
    const sealed = await activeSealedRelease(this.o.store)
    const next = sealed ? ServedRelease.load(sealed) : ServedRelease.none()
    this.stamp = stamp
    if (next.version !== this.served.version || next.checksum !== this.served.checksum) {
      const previous = this.served.version
      await this.o.serve(next)
      this.served = next
      this.o.onSwitch?.(next)
      if (previous !== null || next.version !== null) log.info({ from: previous, to: next.version, checksum_verified: next.checksumVerified }, 'release switched')
    }
    return this.served
  }

  private stopped = false

  async stop(): Promise<void> {
    this.stopped = true
    await this.task.stop()
    await this.checking
  }
}
