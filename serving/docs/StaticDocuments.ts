/**
 * Documents that depend only on the registry and the configuration, serialized once at start so serving them is a
 * buffer write.
 */
import type { AnswerKeys } from '../../record/answerKeys/answerSignature.ts'
import type { DataTime } from '../../product/platform/schemas.ts'
import type { ServingConfig } from '../config.ts'
import type { RouteDef } from '../routes/types.ts'
import { buildOpenApi } from './openapi.ts'
import { ROBOTS_TXT, buildAgentCard, buildAiTxt, buildLlmsTxt, buildMcpDiscovery, buildX402 } from './discovery.ts'

const JSON_TYPE = 'application/json; charset=utf-8'
const TEXT_TYPE = 'text/plain; charset=utf-8'
const MARKDOWN_TYPE = 'text/markdown; charset=utf-8'

export interface ServedDocument {
  body: Uint8Array
  contentType: string
}

const json = (v: unknown): ServedDocument => ({ body: Buffer.from(JSON.stringify(v)), contentType: JSON_TYPE })
const text = (v: string, contentType = TEXT_TYPE): ServedDocument => ({ body: Buffer.from(v), contentType })

export class StaticDocuments {
  readonly openApiObject: Record<string, unknown>

  private constructor(
    readonly startedAtMs: number,
    readonly baseUrl: string,
    readonly openapi: ServedDocument,
    readonly x402: ServedDocument,
    readonly agent: ServedDocument,
    readonly aiTxt: ServedDocument,
    readonly llms: ServedDocument,
    readonly robots: ServedDocument,
    readonly mcp: ServedDocument,
    readonly docsLocation: string,
    openApiObject: Record<string, unknown>,
  ) {
    this.openApiObject = openApiObject
  }

  /**
   * answerKeys: the published answer keys (record/answerKeys/answerSignature.ts answerKeysOf), one source for every
   * document. dataTime: the data-time object's status at start (what every answer's x-svc-data-time is built from), or
   * null when no venue feed is wired; the documents state only its parts that hold for the life of the process.
   */
  static build(routes: readonly RouteDef[], config: ServingConfig, baseUrl: string, startedAtMs: number, answerKeys: AnswerKeys, dataTime: DataTime | null = null): StaticDocuments {
    const docsLocation = config.docsUrl ?? '/openapi.json'
    const openapi = buildOpenApi(routes, { serverUrl: baseUrl, version: config.serviceVersion, payTo: config.payTo, answerKeys })
    return new StaticDocuments(
      startedAtMs,
      baseUrl,
      json(openapi),
      json(buildX402(routes, baseUrl, config.payTo)),
      json(buildAgentCard(routes, baseUrl, config.docsUrl ?? `${baseUrl}/openapi.json`, config.serviceVersion, answerKeys, dataTime)),
      text(buildAiTxt(routes, baseUrl, dataTime)),
      text(buildLlmsTxt(routes, baseUrl, answerKeys, dataTime), MARKDOWN_TYPE),
      text(ROBOTS_TXT),
      json(buildMcpDiscovery(routes, baseUrl, config.payTo)),
      docsLocation,
      openapi,
    )
  }
}
