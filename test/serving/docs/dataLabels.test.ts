/**
 * Issue 33 item 5, honest labels: where people and agents look first (the /record page, llms.txt, the agent card,
 * ai.txt) says what the data is, from the same data-time object as every answer's x-svc-data-time header. A real
 * server with a real DataTimeline per configuration: the simulated venue in the present, and the replay of a recorded
 * (not simulated) tape. The live venue is checked end to end in test/app/liveVenue.test.ts, the simulated tape in
 * test/app/ServiceApp.test.ts, the banner's visibility in Chromium in test/serving/docs/trackRecordPage.test.ts.
 */
import t from 'tap'
import { DataTimeline } from '../../../product/platform/DataTimeline.ts'
import { MeasuredRecord } from '../../../record/MeasuredRecord.ts'
import { RecordDb } from '../../../record/RecordDb.ts'
import { withServer } from '../../helpers/serving/server.ts'
import { makeTempDir } from '../../helpers/tmp.ts'
import type { TapTest } from '../../helpers/logs.ts'

const EVENT = Date.parse('2026-01-31T10:00:00Z')

async function serve(t: TapTest, timeline: DataTimeline | null) {
  const db = await RecordDb.open(await makeTempDir(t, 'svc-data-labels-'))
  t.teardown(() => db.close())
  const record = new MeasuredRecord(db)
  const server = await withServer(t, { services: { record, ...(timeline ? { dataTime: timeline } : {}) } })
  const text = async (path: string) => {
    const res = await fetch(server.url + path)
    return { status: res.status, header: res.headers.get('x-svc-data-time'), body: await res.text() }
  }
  return { server, text }
}

/** The banner as the page writes it: its kind attribute, its visible text (tags dropped) and its data-time JSON. */
function bannerOf(html: string): { kind: string; text: string; time: Record<string, unknown> } | null {
  const m = /<div class="banner ([^"]*)"[^>]*data-data-kind="([^"]*)" data-data-time="([^"]*)">([\s\S]*?)<\/div>/.exec(html)
  if (!m) return null
  const unescape = (s: string) => s.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&')
  return { kind: JSON.parse(unescape(m[2]!)) as string, time: JSON.parse(unescape(m[3]!)) as Record<string, unknown>, text: unescape(m[4]!.replace(/<[^>]+>/g, '')) }
}

t.test('the simulated venue in the present: SIMULATED on /record, in llms.txt, the agent card and ai.txt', async (t) => {
  const timeline = new DataTimeline({ mode: 'present', source: 'simulated', simulated: true, speed: 1, eventTime: () => EVENT, clock: { now: () => EVENT + 30_000 } })
  const { text } = await serve(t, timeline)
  const page = await text('/record')
  t.equal(page.status, 200)
  t.equal(page.header, 'present; event_time=2026-01-31T10:00:00.000Z; source=simulated; quality=simulated; warming_up', 'the header every answer carries')
  const banner = bannerOf(page.body)
  t.ok(banner, 'the page has a banner')
  t.equal(banner!.kind, 'simulated')
  t.match(banner!.text, /^\s*SIMULATED The built-in market generator, running in the present; not a real market/)
  t.match(banner!.text, 'Newest generated event: 2026-01-31T10:00:00.000Z. Warming up')
  t.match(banner!.text, `x-svc-data-time: ${page.header}`, 'the banner shows the header it is made from')
  t.same(banner!.time, timeline.status(), 'the banner carries the data-time object itself')
  t.ok(page.body.indexOf('class="banner') < page.body.indexOf('<h1>'), 'above the title')

  timeline.markWarm()
  const warm = bannerOf((await text('/record')).body)!
  t.notMatch(warm.text, /Warming up/, 'per request: warm now, and the page says so')

  const llms = await text('/llms.txt')
  t.match(llms.body, /\n\*\*Data: SIMULATED\.\*\* The built-in market generator, running in the present; not a real market\./)
  t.ok(llms.body.indexOf('**Data: SIMULATED.**') < llms.body.indexOf('## Recipe for agents'), 'before the recipe')
  const card = JSON.parse((await text('/.well-known/agent.json')).body) as { data: Record<string, unknown>; url: string }
  t.match(card.data, { kind: 'simulated', simulated: true, mode: 'present', source: 'simulated', header: 'x-svc-data-time', status: `${card.url}/readyz` })
  t.match(card.data.notice, /^SIMULATED\. The built-in market generator/)
  const ai = (await text('/.well-known/ai.txt')).body.split('\n')
  t.equal(ai[1], `# Data: ${card.data.notice}`, 'ai.txt: the same line, second')
})

t.test('the replay of a recorded tape: REPLAY and its virtual time, never "simulated"', async (t) => {
  let at = EVENT
  const timeline = new DataTimeline({ mode: 'replay', source: 'hl-2026-01.ndjson.gz', simulated: false, speed: 60, eventTime: () => at, clock: { now: () => Date.now() } })
  timeline.markWarm()
  const { text } = await serve(t, timeline)
  const page = await text('/record')
  t.equal(page.header, 'replay; virtual_time=2026-01-31T10:00:00.000Z; speed=60; source=hl-2026-01.ndjson.gz; quality=real')
  const banner = bannerOf(page.body)!
  t.equal(banner.kind, 'replay')
  t.match(banner.text, /REPLAY Recorded venue data from the tape hl-2026-01\.ndjson\.gz, played at 60x\. Answers live in the tape's virtual time, not the present/)
  t.match(banner.text, 'Virtual time now: 2026-01-31T10:00:00.000Z.')
  t.notMatch(banner.text, /simulated/i)
  at += 3_600_000
  t.match(bannerOf((await text('/record')).body)!.text, 'Virtual time now: 2026-01-31T11:00:00.000Z.', 'the virtual time moves on the page')

  t.match((await text('/llms.txt')).body, '**Data: REPLAY.** Recorded venue data from the tape hl-2026-01.ndjson.gz, played at 60x.')
  const card = JSON.parse((await text('/.well-known/agent.json')).body) as { data: Record<string, unknown> }
  t.match(card.data, { kind: 'replay', simulated: false, mode: 'replay', source: 'hl-2026-01.ndjson.gz' })
  t.match((await text('/.well-known/ai.txt')).body, '# Data: REPLAY. Recorded venue data')
})

t.test('no venue feed wired: no banner and no data line (nothing is claimed)', async (t) => {
  const { text } = await serve(t, null)
  t.equal(bannerOf((await text('/record')).body), null)
  t.notMatch((await text('/llms.txt')).body, '**Data:')
  t.notOk((JSON.parse((await text('/.well-known/agent.json')).body) as { data?: unknown }).data)
})
