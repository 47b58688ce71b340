/**
 * The MCP tool catalog, derived from the route registry: every public RouteDef with an `mcp` field is one tool.
 *
 * Spec (MCP tool server): "tools/call with params { name, arguments }". A tool's arguments are the union of its
 * route's params, query and body schemas; each argument goes back to the request part that declares it, so a tool
 * call is the REST request the route already validates, prices and gates.
 */
import { SESSION_PATH } from '../auth/signInHowTo.ts'
import { priceOf, type Price } from '../../product/billing/pricing.ts'
import { isPublic, pricingKeyFor } from '../routes/derive.ts'
import type { JsonSchema, RouteDef } from '../routes/types.ts'

/** What every payer-scoped tool adds to its description. */
export const MCP_PAYER_PROOF = `Proves the payer: send Authorization: Bearer <token> (from POST ${SESSION_PATH} with a signed sign-in-with-x challenge) and x-svc-payer on the MCP HTTP request.`

export type ArgumentPart = 'params' | 'query' | 'body'

export interface CatalogTool {
  name: string
  description: string
  /** One object schema: the route's params, query and body properties merged. */
  inputSchema: { type: 'object'; properties: Record<string, unknown>; required?: string[]; additionalProperties?: boolean }
  route: RouteDef
  /** Where each argument goes in the synthesized request. */
  parts: Record<string, ArgumentPart>
}

interface ObjectSchema {
  properties?: Record<string, unknown>
  required?: string[]
}

/** TypeBox schemas carry symbol keys; the catalog is plain JSON. */
const plain = (s: JsonSchema): ObjectSchema => JSON.parse(JSON.stringify(s)) as ObjectSchema

export function buildCatalog(routes: readonly RouteDef[]): CatalogTool[] {
  const tools: CatalogTool[] = []
  const names = new Set<string>()
  for (const route of routes) {
    if (!route.mcp || !isPublic(route)) continue
    if (names.has(route.mcp.name)) throw new Error(`MCP tool ${route.mcp.name} is declared by two routes`)
    names.add(route.mcp.name)
    const properties: Record<string, unknown> = {}
    const required: string[] = []
    const parts: Record<string, ArgumentPart> = {}
    for (const part of ['params', 'query', 'body'] as const) {
      const schema = route.request[part]
      if (!schema) continue
      const s = plain(schema)
      for (const [prop, def] of Object.entries(s.properties ?? {})) {
        // Two parts declaring one name could not be routed back: fail at start, not on a call.
        if (prop in parts) throw new Error(`MCP tool ${route.mcp.name}: argument ${prop} is declared by ${parts[prop]} and ${part}`)
        properties[prop] = def
        parts[prop] = part
      }
      for (const r of s.required ?? []) required.push(r)
    }
    tools.push({
      name: route.mcp.name,
      // A payer-scoped tool says how to prove the payer, so a model choosing it knows what the call needs (issue 29).
      description: route.payer ? `${route.mcp.description} ${MCP_PAYER_PROOF}` : route.mcp.description,
      inputSchema: { type: 'object', properties, ...(required.length > 0 ? { required } : {}), additionalProperties: false },
      route,
      parts,
    })
  }
  return tools
}

/** The rung-0 list price of a tool (null when free), as the discovery document and llms.txt state it. */
export function toolPrice(tool: CatalogTool): Price | null {
  return tool.route.pay.kind === 'paid' ? priceOf(pricingKeyFor(tool.route, {}), 0) : null
}
