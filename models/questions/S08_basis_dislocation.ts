/**
 * S08_basis_dislocation (identifier chosen here; the spec leaves S08 unnamed). Not offered in v1: no recorded tape
 * carries mark and index together, so the question can be neither fitted nor evaluated (docs/decisions.md).
 */
import { UnsoldQuestion } from './UnsoldQuestion.ts'

export const S08_basis_dislocation = new UnsoldQuestion({
  id: 'S08_basis_dislocation',
  label: 'Basis dislocation',
  scope: 'market',
  horizonMs: 3_600_000,
  reason: () => 'not_offered_in_v1',
})
