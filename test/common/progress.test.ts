/**
 * Progress on a TTY: a bar against a known total; with the total unknown, a count and the time taken, never a bar
 * against a made-up total of 1 (issue 14: "its progress bar shows 10000/1 when the total is unknown").
 */
import t from 'tap'
import { PassThrough } from 'node:stream'
import { startProgress } from '../../common/progress.ts'

function tty(): { stream: NodeJS.WriteStream; text: () => string } {
  const s = new PassThrough() as unknown as NodeJS.WriteStream & { isTTY: boolean; columns: number }
  s.isTTY = true
  s.columns = 120
  Object.assign(s, { cursorTo: () => true, clearLine: () => true, moveCursor: () => true })
  let out = ''
  ;(s as unknown as PassThrough).on('data', (b: Buffer) => (out += b.toString()))
  return { stream: s, text: () => out.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '') }
}

t.test('an unknown total shows the count, not N/1', async (t) => {
  const { stream, text } = tty()
  const p = startProgress('eval', 0, 'ticks', { everyMs: 0, plain: false, stream })
  p.update(10_000)
  p.stop()
  t.match(text(), /eval 10000 ticks/)
  t.notMatch(text(), /10000\/1\b/)
})

t.test('a known total shows the bar with value/total', async (t) => {
  const { stream, text } = tty()
  const p = startProgress('eval', 0, 'ticks', { everyMs: 0, plain: false, stream })
  p.setTotal(20_000)
  p.update(10_000)
  p.stop()
  t.match(text(), /10000\/20000 ticks/)
  t.match(text(), /50%/)
})
