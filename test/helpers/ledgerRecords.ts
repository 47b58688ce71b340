/** Ledger records for tests: the one sample fixture (bench/ledgerRecords.ts, shared with the benchmarks). */
export { testDecision, testOutcome } from '../../bench/ledgerRecords.ts'
