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

t.test('two bars on one terminal: the newer draws, the older freezes and draws again when the newer stops', async (t) => {
  // Issue 33 item 7: the service's warm-up bar and its bootstrap release's bars run at the same time.
  const { stream, text } = tty()
  const warm = startProgress('svc: warm-up', 100, 'minutes', { everyMs: 0, plain: false, stream })
  warm.update(40)
  const release = startProgress('svc: release read', 10, 'ticks', { everyMs: 0, plain: false, stream })
  const atRelease = text().length
  warm.update(60) // the warm-up goes on, silently, while the release draws
  release.update(5)
  release.stop()
  const whileRelease = text().slice(atRelease, text().lastIndexOf('5/10 ticks'))
  t.notMatch(whileRelease, /svc: warm-up/, 'nothing of the frozen bar is drawn while the newer one is')
  t.match(text().slice(0, atRelease), /40\/100 minutes/, 'the older bar froze where it stood')
  t.match(text().slice(text().lastIndexOf('5/10 ticks')), /svc: warm-up \[[^\]]*\] 60% \| 60\/100 minutes/, 'and draws again, at its current value, once the newer stops')
  warm.update(100)
  warm.stop()
  t.match(text(), /100\/100 minutes/)
  const before = text().length
  const again = startProgress('next', 3, 'x', { everyMs: 0, plain: false, stream })
  again.stop()
  t.notMatch(text().slice(before), /svc: warm-up/, 'a stopped bar never draws again')
})
