-- Views over the billing draws journal (billing_draw_rows: sql/002_journals.sql, generated from pipeline/records/drawRecord.ts),
-- the source of truth for credit balances. Storage: ${DATA_DIR}/parquet/billing.draws/date=YYYY-MM-DD/asset=%2A/...
-- Append-only: a reversal is a new refund row with the debit's ref and lot_id; reversed_at is derived here.

-- The spec's draws: debit (amount < 0), credit, refund; answer receipts are left out.
CREATE OR REPLACE VIEW billing_draws AS
SELECT d.id, d.payer, d.kind, d.amount, d.reason, d.ref, d.lot_id, d.created_at, d.expires_at,
       CASE WHEN d.kind = 'debit' THEN (
         SELECT min(r.created_at) FROM billing_draw_rows r
         WHERE r.kind = 'refund' AND r.ref = d.ref AND r.lot_id = d.lot_id AND r.payer = d.payer
       ) END AS reversed_at
FROM billing_draw_rows d
WHERE d.kind IN ('debit', 'credit', 'refund');

-- Balances per payer and lot as the journal states them (expiry is applied by the reader's clock).
CREATE OR REPLACE VIEW billing_lots AS
SELECT c.payer, c.lot_id, c.reason AS source, c.amount AS granted, c.created_at, c.expires_at,
       (c.amount + coalesce((SELECT sum(m.amount) FROM billing_draw_rows m
                             WHERE m.payer = c.payer AND m.lot_id = c.lot_id AND m.kind IN ('debit', 'refund')), 0))::BIGINT AS remaining
FROM billing_draw_rows c
WHERE c.kind = 'credit';
