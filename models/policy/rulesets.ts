/**
 * Every sealed ruleset this code base knows, by version: replay re-applies the recorded one or a pinned one.
 * Spec, Versioning 3: "Replay accepts an optional ruleset_version pin; a bad version pin is a 400 VALIDATION."
 * A pin may be written as the policy_version itself ('policy-1.0.0') or as its semantic version ('1.0.0', 'v1.0.0').
 */
import { Policy } from './Policy.ts'
import { JEV_VERSION } from '../version.ts'

let known: Map<string, Policy> | null = null

function registry(): Map<string, Policy> {
  if (!known) {
    known = new Map([Policy.v1(), Policy.v2(), Policy.v3()].map((p) => [p.version, p]))
  }
  return known
}

/**
 * The ruleset in force for new decisions: v3 (v2's rules, sealed for the jev-2.0.0 models; docs/decisions.md). Older
 * rows keep their policy_version and replay under it.
 */
export const ACTIVE_POLICY_VERSION = 'policy-3.0.0'

export function activePolicy(): Policy {
  const policy = registry().get(ACTIVE_POLICY_VERSION)!
  if (policy.jevVersion !== JEV_VERSION) throw new Error(`the ruleset in force (${ACTIVE_POLICY_VERSION}) is sealed for ${policy.jevVersion}, not this model layer's ${JEV_VERSION}`)
  return policy
}

/** The ruleset of a policy_version or pin, or null when no sealed ruleset has that version. */
export function policyByVersion(versionOrPin: string): Policy | null {
  const r = registry()
  const direct = r.get(versionOrPin)
  if (direct) return direct
  const m = /^v?(\d+\.\d+\.\d+)$/.exec(versionOrPin)
  return m ? r.get(`policy-${m[1]}`) ?? null : null
}

export function knownPolicyVersions(): string[] {
  return [...registry().keys()]
}
