/**
 * A data folder belongs to one venue: `<data>/venue.json` binds it to the simulated venue or to the live venue and
 * its base URL at the first start, and `svc start` refuses a folder that holds another venue's history (issue 28: the
 * live venue's ticks never mix with simulated ones). SVC_TAPE and SVC_VENUE=hyperliquid are one venue too many.
 */
import t from 'tap'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { AppConfigError, ServiceApp } from '../../app/ServiceApp.ts'
import { loadConfig } from '../../app/config.ts'
import { marketWiringOf } from '../../app/openMarketServices.ts'
import { makeTempDir } from '../helpers/tmp.ts'

const base = { PORT: '0', SVC_RECORD_INTERVAL_S: '0', LOG_LEVEL: 'warn' }

t.test('a folder holds one venue; SVC_TAPE and the live venue are exclusive', async (t) => {
  const dir = await makeTempDir(t, 'svc-venue-bind-')
  const simulated = await ServiceApp.start(loadConfig({ ...base, SVC_DATA_DIR: dir, SVC_SIM_HISTORY_DAYS: '2', SVC_TRAIN_DAYS: '1' }), () => undefined)
  await simulated.close()
  t.match(JSON.parse(await readFile(join(dir, 'venue.json'), 'utf8')), { seed: 1, assets: ['BTC', 'ETH', 'SOL'] }, 'the first start bound the folder to the simulated venue')
  await t.rejects(
    ServiceApp.start(loadConfig({ ...base, SVC_DATA_DIR: dir, SVC_VENUE: 'hyperliquid', SVC_HL_BASE_URL: 'http://127.0.0.1:1' }), () => undefined),
    { name: AppConfigError.name, message: /holds the simulated venue's history/ },
    'the live venue on a simulated folder is refused',
  )

  const live = await makeTempDir(t, 'svc-venue-bind-live-')
  await t.rejects(
    ServiceApp.start(loadConfig({ ...base, SVC_DATA_DIR: live, SVC_VENUE: 'hyperliquid', SVC_TAPE: '/nonexistent.ndjson' }), () => undefined),
    { message: /SVC_TAPE replays a dated tape and SVC_VENUE=hyperliquid streams the live venue/ },
  )
  const first = await ServiceApp.start(loadConfig({ ...base, SVC_DATA_DIR: live, SVC_VENUE: 'hyperliquid', SVC_HL_BASE_URL: 'http://127.0.0.1:1', SVC_TRAIN_DAYS: '10' }), () => undefined)
  await first.close()
  const bound = JSON.parse(await readFile(join(live, 'venue.json'), 'utf8')) as Record<string, unknown>
  t.match(bound, { venue: 'hyperliquid', base_url: 'http://127.0.0.1:1', coins: ['BTC', 'ETH', 'SOL'], bar_interval: '1h', history_days: 17 }, 'the first live start binds the folder: venue, endpoint, 10 + 7 days of history')
  t.ok(Number.isFinite(Date.parse(String(bound.train_until))), 'and the training cut')
  await t.rejects(
    ServiceApp.start(loadConfig({ ...base, SVC_DATA_DIR: live, SVC_VENUE: 'hyperliquid', SVC_HL_BASE_URL: 'http://127.0.0.1:2' }), () => undefined),
    { message: /holds history from http:\/\/127\.0\.0\.1:1, not http:\/\/127\.0\.0\.1:2/ },
    'another endpoint on the same folder is refused',
  )
  await t.rejects(
    ServiceApp.start(loadConfig({ ...base, SVC_DATA_DIR: live }), () => undefined),
    { message: /holds the live venue's history/ },
    'the simulated venue on a live folder is refused',
  )
  const again = await ServiceApp.start(loadConfig({ ...base, SVC_DATA_DIR: live, SVC_VENUE: 'hyperliquid', SVC_HL_BASE_URL: 'http://127.0.0.1:1/', SVC_TRAIN_DAYS: '30' }), () => undefined)
  await again.close()
  t.same(JSON.parse(await readFile(join(live, 'venue.json'), 'utf8')), bound, 'a restart keeps what the first start fixed (the cut and the history span), whatever SVC_TRAIN_DAYS says now')
})

t.test('the universe follows the venue unless SVC_UNIVERSE says otherwise', async (t) => {
  t.equal(marketWiringOf(loadConfig({})).universe, 'replay')
  t.equal(marketWiringOf(loadConfig({ SVC_VENUE: 'hyperliquid' })).universe, 'hyperliquid')
  t.equal(marketWiringOf(loadConfig({ SVC_VENUE: 'hyperliquid', SVC_UNIVERSE: 'replay' })).universe, 'replay')
  t.throws(() => loadConfig({ SVC_VENUE: 'binance' }), /environment\/SVC_VENUE/)
  t.throws(() => loadConfig({ SVC_HL_WS_URL: 'http://x' }), /environment\/SVC_HL_WS_URL/)
})
