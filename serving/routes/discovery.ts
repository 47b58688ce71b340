/**
 * Discovery documents (spec, Discovery): OpenAPI at both paths, the x402 requirements, the agent card, ai.txt, the
 * agent recipe (llms.txt = llms-full.txt), robots.txt and the /docs redirect. All are built once at start from the
 * registry (serving/docs/StaticDocuments.ts) and served as bytes.
 */
import type { ServedDocument, StaticDocuments } from '../docs/StaticDocuments.ts'
import { FREE } from './define.ts'
import type { RouteDef } from './types.ts'

const JSON_DOC = { type: 'object' } as const

const doc = (id: string, path: string, summary: string, pick: (d: StaticDocuments) => ServedDocument, response: RouteDef['response']): RouteDef => ({
  id, method: 'GET', path, summary, tags: ['discovery'], pay: FREE, request: {}, response, errors: [],
  handler: (ctx) => ({ raw: pick(ctx.documents) }),
})

export const DISCOVERY_ROUTES: readonly RouteDef[] = [
  doc('openapi', '/openapi.json', 'OpenAPI 3.1 document', (d) => d.openapi, { kind: 'json', schema: JSON_DOC }),
  doc('openapi.v1', '/v1/openapi.json', 'OpenAPI 3.1 document (versioned path)', (d) => d.openapi, { kind: 'json', schema: JSON_DOC }),
  doc('wellknown.x402', '/.well-known/x402.json', 'x402 payment requirements of every paid route', (d) => d.x402, { kind: 'json', schema: JSON_DOC }),
  doc('wellknown.mcp', '/.well-known/mcp.json', 'MCP discovery: the streamable-HTTP endpoint and its tool catalog with prices', (d) => d.mcp, { kind: 'json', schema: JSON_DOC }),
  doc('wellknown.x402.mcp', '/.well-known/x402/mcp.json', 'Same document as /.well-known/mcp.json', (d) => d.mcp, { kind: 'json', schema: JSON_DOC }),
  doc('wellknown.agent', '/.well-known/agent.json', 'Agent card', (d) => d.agent, { kind: 'json', schema: JSON_DOC }),
  doc('wellknown.ai', '/.well-known/ai.txt', 'Documents to read first', (d) => d.aiTxt, { kind: 'text', contentType: 'text/plain; charset=utf-8' }),
  doc('llms', '/llms.txt', 'Agent recipe and endpoint reference', (d) => d.llms, { kind: 'text', contentType: 'text/markdown; charset=utf-8' }),
  doc('llms.full', '/llms-full.txt', 'Same document as /llms.txt', (d) => d.llms, { kind: 'text', contentType: 'text/markdown; charset=utf-8' }),
  doc('robots', '/robots.txt', 'Crawler rules', (d) => d.robots, { kind: 'text', contentType: 'text/plain; charset=utf-8' }),
  {
    id: 'docs',
    method: 'GET',
    path: '/docs',
    summary: 'Redirects to the human documentation, else to /openapi.json',
    tags: ['discovery'],
    pay: FREE,
    request: {},
    response: { kind: 'redirect' },
    errors: [],
    handler: (ctx) => ({ redirect: ctx.documents.docsLocation, status: 302 }),
  },
]
