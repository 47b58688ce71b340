/**
 * A repeat is not charged (issue 32; product/billing/RepeatRefunds.ts): the debit of a repeat's credits payment is
 * reversed once (`reversal.repeat`), by the instance that owns the payer only, also when the repeat is seen before its
 * debit is read; another instance drops it once it reads the owner's reversal; an x402 repeat is left charged.
 */
import t from 'tap'
import { join } from 'node:path'
import pino from 'pino'
import { Journal } from '../../../pipeline/journal/Journal.ts'
import { UnitOfWork } from '../../../pipeline/journal/UnitOfWork.ts'
import { EmbeddedLog } from '../../../pipeline/log/EmbeddedLog.ts'
import { DRAWS } from '../../../pipeline/records/drawRecord.ts'
import { CreditLedger } from '../../../product/billing/CreditLedger.ts'
import { RepeatRefunds } from '../../../product/billing/RepeatRefunds.ts'
import { systemClock } from '../../../common/Clock.ts'
import { makeTempDir } from '../../helpers/tmp.ts'
import { until } from '../../helpers/until.ts'

const PAYER = '0x1111111111111111111111111111111111111111'
const logger = pino({ level: 'silent' })

t.test('the owner reverses a repeat\'s debit once; a non-owner leaves it to the owner; x402 stays charged', async (t) => {
  const log = await EmbeddedLog.open(join(await makeTempDir(t, 'svc-repeat-refunds-'), 'log'))
  t.teardown(() => log.close())
  const journal = await Journal.open({ log, def: DRAWS, topic: 'billing.draws', partitions: 3 })
  const ledger = await CreditLedger.open(journal, systemClock, { recover: false, logger })
  t.teardown(() => ledger.close())
  await ledger.credit(PAYER, 10_000, { reason: 'grant', ref: 'g1', lifetimeDays: null })

  const paid = async (credits: number) => {
    const hold = ledger.hold(PAYER, credits, { key: 'decision.deep', entryTier: false })
    if (hold.kind !== 'hold') throw new Error('short')
    const unit = new UnitOfWork()
    ledger.settleHoldIn(hold, { refusal: false }, unit)
    ledger.answeredIn(hold, unit)
    await unit.commit()
    return hold.payment_id
  }
  const refundsOf = (ref: string) => ledger.draws(PAYER, 100).draws.filter((d) => d.kind === 'refund' && d.ref === ref)

  let owner = false
  const refunds = new RepeatRefunds(ledger, () => owner, logger)
  t.teardown(() => refunds.close())
  const ref = await paid(1_500)
  t.equal(ledger.balance(PAYER), 8_500, 'the repeat\'s call was charged (both instances answered it)')

  // Not the payer's owner: nothing is written, the repeat waits for the owner's reversal.
  refunds.note({ decision_id: 'd1', payment_id: ref, payment_rail: 'credits' })
  await refunds.sweep()
  t.equal(refundsOf(ref).length, 0, 'a non-owner does not reverse it')
  t.equal(refunds.waiting, 1, 'and keeps it until the reversal is read')

  // Ownership arrives (a takeover): the next sweep reverses it, once.
  owner = true
  await refunds.sweep()
  t.same(refundsOf(ref).map((d) => [d.amount, d.reason]), [[1_500, 'reversal.repeat']], 'the owner reversed it: one refund of the debit, reason reversal.repeat')
  t.equal(ledger.balance(PAYER), 10_000, 'the payer is charged nothing for the repeat')
  t.equal(refunds.waiting, 0, 'nothing left waiting')
  refunds.note({ decision_id: 'd1', payment_id: ref, payment_rail: 'credits' })
  await refunds.sweep()
  t.equal(refundsOf(ref).length, 1, 'seen again (a rebuild replays the repeat): no second refund')

  // Seen before its debit is read (the decisions follower ahead of the draws follower): reversed once the debit is.
  const early = 'cr_not-yet-read'
  refunds.note({ decision_id: 'd2', payment_id: early, payment_rail: 'credits' })
  await refunds.sweep()
  t.equal(refunds.waiting, 1, 'a repeat whose debit is not read yet waits')
  const hold = ledger.hold(PAYER, 700, { key: 'decision.deep', entryTier: false, paymentId: early })
  if (hold.kind !== 'hold') throw new Error('short')
  const unit = new UnitOfWork()
  ledger.settleHoldIn(hold, { refusal: false }, unit)
  ledger.answeredIn(hold, unit)
  await unit.commit()
  await until('the early repeat reversed', () => refundsOf(early).length === 1, 5_000)
  t.same(refundsOf(early).map((d) => d.amount), [700], 'reversed by the sweep once its debit was read')

  // x402: settled on chain, nothing to reverse here.
  refunds.note({ decision_id: 'd3', payment_id: 'x402-pay', payment_rail: 'x402' })
  t.equal(refunds.waiting, 0, 'an x402 repeat is not kept to reverse')
  t.equal(ledger.balance(PAYER), 10_000, 'balance = grants − debits + reversals')
})
