-- Derived views over the ledger: the question catalog, open clocks and the resolved feed.

-- The catalog's labels and whether this deployment sells the question (models/questions/index.ts; a test checks
-- this list against the registry).
CREATE OR REPLACE VIEW question_catalog AS
SELECT * FROM (VALUES
  ('S01_market_regime', 'Market regime', 'choice', 'market', true),
  ('S02_liquidation_risk', 'Liquidation risk', 'probability', 'market', false),
  ('S03_trend_continuation', 'Trend continuation', 'probability', 'market', true),
  ('S04_drawdown_risk', 'Drawdown risk', 'probability', 'market', true),
  ('S05_volatility_expansion', 'Volatility expansion', 'probability', 'market', true),
  ('S06_funding_anomaly', 'Funding anomaly', 'probability', 'market', true),
  ('S07_funding_persistence', 'Funding persistence', 'probability', 'market', true),
  ('S08_basis_dislocation', 'Basis dislocation', 'probability', 'market', false),
  ('S09_wallet_state', 'Wallet state', 'choice', 'account', true),
  ('S10_wallet_flow', 'Wallet net inflow', 'probability', 'account', true),
  ('S11_risk', 'Risk', 'choice', 'account', true)
) AS q(question_id, label, answer, scope, sold);

-- Open clocks (spec: Open clock { question_id, asset, question_label, decision_id, predicted, horizon_end }):
-- claims (refusals open no clock) on live market questions over BTC, ETH, SOL with no outcome yet, soonest horizon_end
-- first. `predicted` is split by type: predicted_label for choice questions, predicted_probability otherwise. The API
-- also drops clocks whose horizon_end the engine's event time has passed (they are awaiting resolution).
CREATE OR REPLACE VIEW open_clocks AS
SELECT d.question_id, d.asset, q.label AS question_label, d.decision_id,
       d.choice_id AS predicted_label,
       CASE WHEN d.choice_id IS NULL THEN d.probability END AS predicted_probability,
       d.horizon_end, d.created_at
FROM decisions d
JOIN question_catalog q USING (question_id)
ANTI JOIN outcomes o USING (decision_id)
WHERE d.action <> 'refuse' AND q.sold AND q.scope = 'market' AND d.asset IN ('BTC', 'ETH', 'SOL')
ORDER BY d.horizon_end, d.decision_id;

-- Feed chips (spec: Feed chip { decision_id, question_id, asset, output, predicted, realized, match, observed,
-- status, resolved_at, horizon_end }), newest resolved first. A choice row has predicted and realized labels and
-- match; a probability row has observed; an unresolvable row keeps its place with the label fields null. No wallet
-- (subject) and no model internals.
CREATE OR REPLACE VIEW feed_chips AS
SELECT o.decision_id, o.question_id, o.asset,
       CASE WHEN d.choice_id IS NOT NULL THEN 'choice' ELSE 'probability' END AS output,
       CASE WHEN o.outcome <> 'unresolvable' AND d.choice_id IS NOT NULL THEN d.choice_id END AS predicted_label,
       CASE WHEN o.outcome <> 'unresolvable' AND d.choice_id IS NULL THEN d.probability END AS predicted_probability,
       CASE WHEN o.outcome <> 'unresolvable' AND d.choice_id IS NOT NULL THEN o.realized_choice END AS realized,
       CASE WHEN o.outcome <> 'unresolvable' AND d.choice_id IS NOT NULL THEN d.choice_id = o.realized_choice END AS match,
       CASE WHEN o.outcome <> 'unresolvable' AND d.choice_id IS NULL THEN o.outcome = 'obtains' END AS observed,
       o.outcome AS status, o.resolved_at, o.horizon_end
FROM outcomes o
JOIN decisions d USING (decision_id)
ORDER BY o.resolved_at DESC, o.decision_id DESC;
