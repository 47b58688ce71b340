"""
Calls the live server through a client that openapi-python-client generated from its /openapi.json, and prints one
JSON line per operation: {"op", "status", "parsed"} or {"op", "status", "error"} when the generated parsing raised.

The generated `_parse_response` builds the documented model for the status (`from_dict`), so a response that does not
fit its documented schema raises here; an undocumented status raises UnexpectedStatus (raise_on_unexpected_status).
Run by test/serving/docs/generatedClient.test.ts: argv = package dir, base URL, a payer address, another payer address.
"""
import json
import sys
import traceback

package_dir, base_url, payer, broke_payer, payer_token = sys.argv[1:6]
sys.path.insert(0, package_dir)

from svc_client import AuthenticatedClient, Client  # noqa: E402
from svc_client.api.billing import billing_credits, billing_draws, billing_scout_grant, billing_scout_status  # noqa: E402
from svc_client.api.decisions import (  # noqa: E402
    clocks_open, decisions_create, decisions_get, decisions_latest, decisions_replay, feed, lineage_get, resolutions_get,
)
from svc_client.api.market import liq_hours, market_snapshot, universe  # noqa: E402
from svc_client.api.measured_record import calibration, intelligence, intelligence_curve, intelligence_releases, policy_seal, priors  # noqa: E402
from svc_client.api.platform import health, healthz, pricing, providers, readyz, signals  # noqa: E402
from svc_client.models import (  # noqa: E402
    BillingScoutGrantBody, DecisionsCreateBody, DecisionsCreateBodyAsset, DecisionsLatestAsset, DecisionsReplayBody,
)

client = Client(base_url=base_url, raise_on_unexpected_status=True, timeout=30.0)
# The payer's bearer session (securitySchemes payerSession): the generated client sends Authorization: Bearer.
payer_client = AuthenticatedClient(base_url=base_url, token=payer_token, raise_on_unexpected_status=True, timeout=30.0)
results = {}


def call(op, fn, as_payer=False, **kwargs):
    """One operation through the generated sync_detailed; returns its parsed model (None when parsing raised)."""
    try:
        response = fn.sync_detailed(client=payer_client if as_payer else client, **kwargs)
        parsed = response.parsed
        line = {"op": op, "status": int(response.status_code), "parsed": type(parsed).__name__}
        if parsed is not None and type(parsed).__name__ == "ErrorEnvelope":
            line["code"] = parsed.error.code
    except Exception as err:  # the finding: report it and go on, so one run shows every mismatch
        status = getattr(err, "status_code", None)
        line = {"op": op, "status": status, "error": f"{type(err).__name__}: {err}", "trace": traceback.format_exc(limit=3)}
        parsed = None
    print(json.dumps(line), flush=True)
    return parsed


# Free reads
call("healthz", healthz)
call("health", health)
call("readyz", readyz)
call("pricing", pricing)
call("providers", providers)
call("signals", signals)
call("market.snapshot", market_snapshot, asset="BTC")
call("universe", universe, limit=5)
call("liq.hours", liq_hours, asset="BTC")
call("clocks.open", clocks_open)
call("feed", feed, limit=10)
latest = call("decisions.latest", decisions_latest, question_id="S01_market_regime", asset=DecisionsLatestAsset.BTC)
decision_id = latest.data.decision_id if latest is not None and hasattr(latest, "data") else None
if decision_id is not None:
    call("decisions.get", decisions_get, decision_id=str(decision_id))
    call("lineage.get", lineage_get, decision_id=str(decision_id))
    call("resolutions.get", resolutions_get, decision_id=decision_id)
    call("decisions.replay", decisions_replay, decision_id=str(decision_id), body=DecisionsReplayBody())
call("calibration", calibration)
call("priors", priors)
call("intelligence", intelligence)
call("intelligence.curve", intelligence_curve)
call("intelligence.releases", intelligence_releases)
call("policy.seal", policy_seal)

# A paid call on credits: the free allowance, then an entry-tier question (S01) drawn from it
call("billing.scout.grant", billing_scout_grant, as_payer=True, body=BillingScoutGrantBody(payer=payer))
call("billing.scout.status", billing_scout_status, as_payer=True, payer=payer)
call("decisions.create", decisions_create, as_payer=True, body=DecisionsCreateBody(asset=DecisionsCreateBodyAsset.BTC, question_id="S01_market_regime"), x_svc_payer=payer)
call("billing.credits", billing_credits, as_payer=True, payer=payer)
call("billing.draws", billing_draws, as_payer=True, payer=payer)

# Error envelopes
call("decisions.create 402", decisions_create, body=DecisionsCreateBody(asset=DecisionsCreateBodyAsset.BTC, question_id="S01_market_regime"), x_svc_payer=broke_payer)
call("decisions.create 400", decisions_create, body=DecisionsCreateBody(asset=DecisionsCreateBodyAsset.BTC, question_id="S99_unknown"))
call("feed 400", feed, limit=0)
call("market.snapshot 404", market_snapshot, asset="NOPE")
call("lineage.get 404", lineage_get, decision_id="00000000-0000-4000-8000-000000000000")
