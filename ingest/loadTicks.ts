/**
 * Every tick of a set of inputs in event time, as `svc eval` and `svc release` read them: tapes (NDJSON tick records,
 * optionally gzip) are read as they are; any other file is a recorded venue response, imported (ingest/importers).
 * Several inputs are merged stably: equal instants keep their input order.
 */
import { open } from 'node:fs/promises'
import { importFiles } from './importers/index.ts'
import { readTape } from './TapeReader.ts'
import { tickTime, type Tick } from './Tick.ts'

/** A tape's first line is a tick record (or it is gzip); anything else is a recorded venue file to import. */
export async function isTape(path: string): Promise<boolean> {
  const fh = await open(path, 'r')
  try {
    const buf = Buffer.alloc(4096)
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0)
    if (bytesRead >= 2 && buf[0] === 0x1f && buf[1] === 0x8b) return true
    const first = buf.subarray(0, bytesRead).toString('utf8').split('\n')[0]!
    const rec = JSON.parse(first) as { v?: unknown; kind?: unknown; provenance?: unknown }
    return typeof rec === 'object' && rec !== null && rec.v === 1 && typeof rec.kind === 'string' && typeof rec.provenance === 'object'
  } catch {
    return false
  } finally {
    await fh.close()
  }
}

/** Every tick of the tapes in event time (stable: equal instants keep file order), as `svc eval` reads them. */
export async function loadTicks(paths: readonly string[]): Promise<Tick[]> {
  const tapes: string[] = []
  const raw: string[] = []
  for (const p of paths) (await isTape(p) ? tapes : raw).push(p)
  const ticks: Tick[] = []
  if (raw.length > 0) for (const tick of (await importFiles(raw)).ticks) ticks.push(tick)
  for (const t of tapes) for await (const e of readTape(t)) ticks.push(e.tick)
  if (tapes.length + (raw.length > 0 ? 1 : 0) > 1) {
    const keyed = ticks.map((tick, i) => ({ tick, i, t: tickTime(tick) }))
    keyed.sort((a, b) => a.t - b.t || a.i - b.i)
    return keyed.map((k) => k.tick)
  }
  return ticks
}

