/**
 * One consumer group's committed offsets in the embedded log: groups/<encoded group id>.json, replaced atomically
 * (temp file, fsync, rename, fsync dir) on every commit. Concurrent commits coalesce: while one write is in flight,
 * later commits share the next write, which snapshots the state when it starts.
 */
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { writeFileAtomic } from './atomicFile.ts'
import { LogError } from './LogError.ts'

interface FileContent {
  version: 1
  groupId: string
  /** topic → partition (as string) → next offset to read */
  offsets: Record<string, Record<string, number>>
}

export class GroupOffsetsFile {
  private inflight: Promise<void> = Promise.resolve()
  private queued: Promise<void> | null = null

  private constructor(
    readonly groupId: string,
    private readonly path: string,
    private readonly offsets: Map<string, Map<number, number>>,
  ) {}

  static fileName(groupId: string): string {
    return `${encodeURIComponent(groupId).replaceAll('.', '%2E')}.json`
  }

  static async load(groupsDir: string, groupId: string): Promise<GroupOffsetsFile> {
    const path = join(groupsDir, GroupOffsetsFile.fileName(groupId))
    const offsets = new Map<string, Map<number, number>>()
    let text: string | null = null
    try {
      text = await readFile(path, 'utf8')
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    }
    if (text !== null) {
      let content: FileContent
      try {
        content = JSON.parse(text) as FileContent
      } catch (err) {
        throw new LogError('LOG_CORRUPT', `${path}: not valid JSON`, { cause: err })
      }
      if (content?.version !== 1 || typeof content.offsets !== 'object' || content.offsets === null) {
        throw new LogError('LOG_CORRUPT', `${path}: unexpected content`)
      }
      for (const [topic, partitions] of Object.entries(content.offsets)) {
        const m = new Map<number, number>()
        for (const [partition, offset] of Object.entries(partitions)) {
          if (!Number.isSafeInteger(offset) || offset < 0) throw new LogError('LOG_CORRUPT', `${path}: bad offset for ${topic}/${partition}`)
          m.set(Number(partition), offset)
        }
        offsets.set(topic, m)
      }
    }
    return new GroupOffsetsFile(groupId, path, offsets)
  }

  get(topic: string, partition: number): number | undefined {
    return this.offsets.get(topic)?.get(partition)
  }

  /** Records the commit and resolves once it is durable. */
  commit(topic: string, partition: number, nextOffset: number): Promise<void> {
    let m = this.offsets.get(topic)
    if (!m) this.offsets.set(topic, (m = new Map()))
    m.set(partition, nextOffset)
    return this.flush()
  }

  /** Resolves when every commit made so far is durable. */
  flush(): Promise<void> {
    if (this.queued) return this.queued
    const queued = this.inflight
      .catch(() => {})
      .then(() => {
        this.queued = null
        return writeFileAtomic(this.path, this.serialize())
      })
    this.queued = queued
    this.inflight = queued
    return queued
  }

  /** Waits for writes in flight (used by close). */
  async settle(): Promise<void> {
    await this.inflight.catch(() => {})
  }

  private serialize(): string {
    const content: FileContent = { version: 1, groupId: this.groupId, offsets: {} }
    for (const [topic, m] of [...this.offsets].sort(([a], [b]) => a.localeCompare(b))) {
      content.offsets[topic] = Object.fromEntries([...m].sort(([a], [b]) => a - b).map(([p, o]) => [String(p), o]))
    }
    return JSON.stringify(content, null, 1) + '\n'
  }
}
