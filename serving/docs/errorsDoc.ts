/**
 * docs/errors.md, rendered from the error registry (common/errors.ts). Regenerate with `svc docs errors`;
 * test/serving/errorsDoc.test.ts fails when the committed file and the registry disagree.
 */
import { fileURLToPath } from 'node:url'
import { ERRORS, ERROR_CODES, REASONS } from '../../common/errors.ts'

export const ERRORS_DOC_PATH = fileURLToPath(new URL('../../docs/errors.md', import.meta.url))

const esc = (s: string) => s.replace(/\|/g, '\\|')

export function renderErrorsDoc(): string {
  const codes = [...ERROR_CODES].sort((a, b) => ERRORS[a].status - ERRORS[b].status || a.localeCompare(b))
  return [
    '# Errors',
    '',
    '<!-- Generated from common/errors.ts by `svc docs errors`. Do not edit by hand; a test checks for drift. -->',
    '',
    'Every non-2xx response carries this envelope (never a stack or a secret):',
    '',
    '```json',
    '{ "error": { "code": "VALIDATION", "message": "...", "retryable": false, "retry_after_ms": null,',
    '             "request_id": "...", "detail": { "reason": "REQUEST_VALIDATION_FAILED", "field": "/query/limit" } } }',
    '```',
    '',
    '`detail.reason` repeats the code unless a more specific machine reason applies (table below).',
    '',
    '## Codes',
    '',
    '| Code | Status | Retryable | Message |',
    '|---|---|---|---|',
    ...codes.map((c) => `| ${c} | ${ERRORS[c].status} | ${ERRORS[c].retryable ? 'yes' : 'no'} | ${esc(ERRORS[c].message)} |`),
    '',
    '## Machine reasons (detail.reason)',
    '',
    '| Reason | With code | Meaning |',
    '|---|---|---|',
    ...Object.entries(REASONS).map(([r, v]) => `| ${r} | ${v.code} | ${esc(v.meaning)} |`),
    '',
  ].join('\n')
}

/** Parses the codes table back (code → status, retryable, message) for the drift test. */
export function parseErrorsDoc(md: string): Map<string, { status: number; retryable: boolean; message: string }> {
  const out = new Map<string, { status: number; retryable: boolean; message: string }>()
  const section = md.split('## Codes')[1]?.split('\n## ')[0] ?? ''
  for (const line of section.split('\n')) {
    const m = /^\| ([A-Z_]+) \| (\d{3}) \| (yes|no) \| (.*) \|$/.exec(line)
    if (m) out.set(m[1]!, { status: Number(m[2]), retryable: m[3] === 'yes', message: m[4]!.replace(/\\\|/g, '|') })
  }
  return out
}
