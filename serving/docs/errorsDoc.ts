/**
 * docs/errors.md, rendered from the error registry (common/errors.ts). Regenerate with `svc docs errors`;
 * test/serving/documents.test.ts fails when the committed file and the registry disagree (codes and reasons, both ways).
 */
import { fileURLToPath } from 'node:url'
import { ERRORS, ERROR_CODES, REASONS, REASON_CODES } from '../../common/errors.ts'

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
    '| Reason | With codes | Meaning |',
    '|---|---|---|',
    ...REASON_CODES.map((r) => `| ${r} | ${REASONS[r].codes.join(', ')} | ${esc(REASONS[r].meaning)} |`),
    '',
  ].join('\n')
}

/** The rows of the table under `## <heading>` whose cells match `row`. */
function tableRows(md: string, heading: string, row: RegExp): RegExpExecArray[] {
  const section = md.split(`## ${heading}`)[1]?.split('\n## ')[0] ?? ''
  return section.split('\n').flatMap((line) => {
    const m = row.exec(line)
    return m ? [m] : []
  })
}

const unescape = (s: string) => s.replace(/\\\|/g, '|')

/** Parses the codes table back (code → status, retryable, message) for the drift test. */
export function parseErrorsDoc(md: string): Map<string, { status: number; retryable: boolean; message: string }> {
  const rows = tableRows(md, 'Codes', /^\| ([A-Z_]+) \| (\d{3}) \| (yes|no) \| (.*) \|$/)
  return new Map(rows.map((m) => [m[1]!, { status: Number(m[2]), retryable: m[3] === 'yes', message: unescape(m[4]!) }]))
}

/** Parses the machine reasons table back (reason → codes, meaning) for the drift test. */
export function parseReasonsDoc(md: string): Map<string, { codes: string[]; meaning: string }> {
  const rows = tableRows(md, 'Machine reasons', /^\| ([A-Za-z0-9_]+) \| ([A-Z_]+(?:, [A-Z_]+)*) \| (.*) \|$/)
  return new Map(rows.map((m) => [m[1]!, { codes: m[2]!.split(', '), meaning: unescape(m[3]!) }]))
}
