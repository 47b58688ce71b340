/**
 * The public track-record page (GET /record): the measured record as one server-rendered HTML document with inline
 * SVG charts and no script. Presentation only: every figure is passed in, read by the route from the same
 * RecordReads and ReleaseReads calls the JSON routes make, so the page and the API agree by construction. The one
 * derived drawing, the consistency bar of a reliability band, comes from models/verification/consistency.ts.
 *
 * Machine-readable: each plotted or tabulated figure carries its value as JSON in a data-* attribute (numbers as
 * JavaScript's shortest round-trip text, so Number(JSON.parse(attr)) is the API's double exactly); the browser test
 * reads them back and compares them with the API's JSON.
 *
 * Safe by construction: markup is built only with the `html` tag below, which escapes every interpolated value unless
 * it is itself markup built by the tag. There are no external assets (the route's Content-Security-Policy forbids
 * them), so the page renders the same offline and leaks no visitor to a CDN.
 */
import { CALIBRATION_BAND_FLOOR, QUESTION_CALIBRATION_FLOOR } from '../../models/verification/calibrationReport.ts'
import { consistencyInterval } from '../../models/verification/consistency.ts'
import type { IntelligenceSnapshot, CalibrationReport, Curve, QuestionPrior } from '../../record/schemas.ts'
import type { ReleaseFeedItem } from '../../record/releases/ReleaseStore.ts'
import type { DataLabel } from '../../product/platform/dataLabel.ts'
import type { DataTime } from '../../product/platform/schemas.ts'

export const TRACK_RECORD_CONTENT_TYPE = 'text/html; charset=utf-8'
/** No script, no external fetch of any kind; inline styles (the page's <style> and SVG attributes) only. */
export const TRACK_RECORD_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
/** The consistency bars' coverage (stated on the page). */
export const CONSISTENCY_LEVEL = 0.95

export interface TrackRecordQuestion {
  question_id: string
  label: string
  answer: QuestionPrior['answer']
  prior: QuestionPrior['prior']
  reason: string | null
  calibration: CalibrationReport
}

export interface TrackRecordFigures {
  generated_at: string
  snapshot: IntelligenceSnapshot | null
  chain_verified: boolean
  /** The learning curve as GET /v1/intelligence/curve serves it (window all, the current index version). */
  curve: Curve
  questions: TrackRecordQuestion[]
  /** null: no release store on this deployment. */
  releases: ReleaseFeedItem[] | null
  /**
   * What the data is (issue 33 item 5): the data-time object's status as this request found it (the one behind every
   * answer's x-svc-data-time) and its label; null when no venue feed is wired.
   */
  data: { time: DataTime; label: DataLabel; header: string } | null
  /** Paths of the JSON routes the figures come from, by route id (so the page names no path of its own). */
  api: { intelligence: string; curve: string; calibration: string; priors: string; releases: string }
}

// ---------------------------------------------------------------- escaping

/** Markup that is already safe (built by `html`). */
class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }
export const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => ESCAPES[c]!)

type Part = Html | string | number | boolean | null | undefined | readonly Part[]

function part(v: Part): string {
  if (v instanceof Html) return v.text
  if (Array.isArray(v)) return v.map(part).join('')
  if (v === null || v === undefined || v === false) return ''
  return escapeHtml(String(v))
}

/** The only way markup is written here: every interpolation is escaped unless it is Html. */
function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  let out = strings[0]!
  values.forEach((v, i) => (out += part(v) + strings[i + 1]!))
  return new Html(out)
}

/** A data-* value: the figure as JSON (escaped by `html` like any other string). */
const data = (v: unknown): string => JSON.stringify(v ?? null)

// ---------------------------------------------------------------- number display

function fmt(v: number | null | undefined, digits = 4): string {
  if (v === null || v === undefined) return 'n/a'
  if (v !== 0 && Math.abs(v) < 10 ** -digits) return v.toExponential(2)
  return v.toFixed(digits)
}
const int = (v: number): string => v.toLocaleString('en-US')
const pct = (v: number | null | undefined): string => (v === null || v === undefined ? 'n/a' : `${(100 * v).toFixed(1)} %`)

// ---------------------------------------------------------------- charts

const W = 360
const H = 300
const M = { left: 48, right: 12, top: 12, bottom: 52 }
const PW = W - M.left - M.right
const PH = H - M.top - M.bottom
const r3 = (v: number) => Math.round(v * 1000) / 1000

function reliabilityDiagram(q: TrackRecordQuestion): Html {
  const x = (p: number) => r3(M.left + p * PW)
  const y = (f: number) => r3(M.top + (1 - f) * PH)
  const ticks = [0, 0.2, 0.4, 0.6, 0.8, 1]
  const grid = ticks.map(
    (v) => html`<line class="grid" x1="${x(v)}" y1="${y(0)}" x2="${x(v)}" y2="${y(1)}"/><line class="grid" x1="${x(0)}" y1="${y(v)}" x2="${x(1)}" y2="${y(v)}"/>
<text class="tick" x="${x(v)}" y="${y(0) + 14}" text-anchor="middle">${v.toFixed(1)}</text><text class="tick" x="${x(0) - 6}" y="${y(v) + 4}" text-anchor="end">${v.toFixed(1)}</text>`,
  )
  const bands = q.calibration.buckets.map((b, i) => {
    const counts = html`<text class="count${b.published ? '' : ' unpublished'}" x="${x((b.lo + b.hi) / 2)}" y="${y(0) + 28}" text-anchor="middle">${b.n}</text>`
    if (!b.published || b.mean_predicted === null || b.realized_frequency === null) return counts
    const bar = consistencyInterval(b.n, b.mean_predicted, CONSISTENCY_LEVEL)!
    const cx = x(b.mean_predicted)
    return html`${counts}<g class="band" data-band="${i}" data-lo="${data(b.lo)}" data-hi="${data(b.hi)}" data-n="${data(b.n)}" data-mean-predicted="${data(b.mean_predicted)}" data-realized-frequency="${data(b.realized_frequency)}" data-consistency-lower="${data(bar.lower)}" data-consistency-upper="${data(bar.upper)}">
<title>band (${b.lo}, ${b.hi}]: n ${b.n}, mean predicted ${fmt(b.mean_predicted)}, realized ${fmt(b.realized_frequency)}; 95 % consistency ${fmt(bar.lower)}–${fmt(bar.upper)}</title>
<rect class="consistency" x="${r3(cx - 5)}" y="${y(bar.upper)}" width="10" height="${r3(Math.max(1, y(bar.lower) - y(bar.upper)))}"/>
<circle class="point" cx="${cx}" cy="${y(b.realized_frequency)}" r="4"/></g>`
  })
  return html`<svg class="chart" role="img" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" data-chart="reliability" data-question-id="${data(q.question_id)}">
<title>Reliability diagram of ${q.question_id}</title>
${grid}<line class="diagonal" x1="${x(0)}" y1="${y(0)}" x2="${x(1)}" y2="${y(1)}"/>
${bands}
<text class="axis" x="${x(0.5)}" y="${H - 6}" text-anchor="middle">predicted (band mean); n per band below</text>
<text class="axis" transform="translate(12 ${y(0.5)}) rotate(-90)" text-anchor="middle">realized frequency</text>
</svg>`
}

function learningCurveChart(curve: Curve): Html {
  const drawn = curve.points.filter((p) => p.n_cum > 0 && p.brier !== null)
  if (drawn.length === 0) return html`<p class="empty" data-curve="empty">No snapshot with a realized outcome yet: nothing to plot.</p>`
  // log10 n on x (a power law is a curve there, and n spans orders of magnitude); Brier from 0 on y.
  const lx = drawn.map((p) => Math.log10(p.n_cum))
  const lo = Math.floor(Math.min(...lx))
  const hi = Math.max(lo + 1, Math.ceil(Math.max(...lx)))
  const yMax = Math.max(0.05, ...drawn.map((p) => p.brier!)) * 1.15
  // Wider than a reliability diagram, with room on the left for Brier ticks and on the right for the last decade.
  const cw = Math.round(W * 1.6)
  const ml = 64
  const pw = cw - ml - 28
  const x = (n: number) => r3(ml + ((Math.log10(n) - lo) / (hi - lo)) * pw)
  const y = (b: number) => r3(M.top + (1 - b / yMax) * PH)
  const decades = Array.from({ length: hi - lo + 1 }, (_, i) => 10 ** (lo + i))
  const yTicks = Array.from({ length: 5 }, (_, i) => (yMax / 5) * i)
  const grid = [
    ...decades.map((n) => html`<line class="grid" x1="${x(n)}" y1="${y(0)}" x2="${x(n)}" y2="${y(yMax)}"/><text class="tick" x="${x(n)}" y="${y(0) + 14}" text-anchor="middle">${int(n)}</text>`),
    ...yTicks.map((b) => html`<line class="grid" x1="${x(10 ** lo)}" y1="${y(b)}" x2="${x(10 ** hi)}" y2="${y(b)}"/><text class="tick" x="${ml - 6}" y="${y(b) + 4}" text-anchor="end">${b.toFixed(3)}</text>`),
  ]
  let fitLine: Html | string = ''
  if (curve.fit) {
    const { a, b, c } = curve.fit
    const from = Math.log10(Math.min(...drawn.map((p) => p.n_cum)))
    const to = Math.log10(Math.max(...drawn.map((p) => p.n_cum)))
    const steps = 48
    const pts = Array.from({ length: steps + 1 }, (_, i) => 10 ** (from + ((to - from) * i) / steps))
      .map((n) => [n, a * n ** -b + c] as const)
      .filter(([, v]) => Number.isFinite(v))
      .map(([n, v]) => `${x(n)},${y(Math.min(yMax, Math.max(0, v)))}`)
      .join(' ')
    fitLine = html`<polyline class="fit" points="${pts}" data-fit="true" data-a="${data(a)}" data-b="${data(b)}" data-c="${data(c)}" data-b-ci="${data(curve.fit.b_ci)}"><title>fit BS(n) = ${fmt(a)}·n^(−${fmt(b)}) + ${fmt(c)}</title></polyline>`
  }
  const points = drawn.map(
    (p) => html`<circle class="point" cx="${x(p.n_cum)}" cy="${y(p.brier!)}" r="4" data-n-cum="${data(p.n_cum)}" data-brier="${data(p.brier)}" data-taken-at="${data(p.taken_at)}"><title>n ${int(p.n_cum)}: Brier ${fmt(p.brier)} (${p.taken_at})</title></circle>`,
  )
  return html`<svg class="chart wide" role="img" viewBox="0 0 ${cw} ${H}" width="${cw}" height="${H}" data-chart="curve">
<title>Learning curve: Brier score against realized outcomes</title>
${grid}
${fitLine}${points}
<text class="axis" x="${x(10 ** ((lo + hi) / 2))}" y="${H - 6}" text-anchor="middle">realized outcomes n (log scale)</text>
<text class="axis" transform="translate(12 ${y(yMax / 2)}) rotate(-90)" text-anchor="middle">Brier score</text>
</svg>`
}

// ---------------------------------------------------------------- sections

const COMPONENTS: ReadonlyArray<[keyof IntelligenceSnapshot['components'], string]> = [
  ['brier', 'Brier score (lower is better)'],
  ['logloss', 'log loss'],
  ['skill_vs_reference', 'skill vs the base rate, 1 − BS/UNC'],
  ['reliability', 'reliability, REL'],
  ['resolution', 'resolution, RES'],
  ['uncertainty', 'uncertainty, UNC'],
  ['ece', 'expected calibration error'],
  ['resolution_rate', 'resolution rate'],
]
const EVIDENCE: ReadonlyArray<[keyof IntelligenceSnapshot['evidence'], string]> = [
  ['n_decisions', 'decisions recorded'],
  ['n_realized', 'realized outcomes (claims)'],
  ['n_unresolvable', 'unresolvable'],
  ['n_refused', 'refusals'],
  ['window_start', 'window start'],
  ['window_end', 'window end'],
]

function indexSection(f: TrackRecordFigures): Html {
  const s = f.snapshot
  const chain = html`<p class="${f.chain_verified ? 'ok' : 'warn'}" data-chain-verified="${data(f.chain_verified)}">Snapshot hash chain ${f.chain_verified ? 'verifies' : 'does NOT verify: a published snapshot was changed'} (recomputed on this read).</p>`
  if (!s) return html`<section id="index"><h2>Decision Intelligence Index</h2>${chain}<p class="empty" data-snapshot="none">No snapshot yet: the batch job has not recorded a resolved outcome.</p></section>`
  const value = (v: number | string | null) => (typeof v === 'number' ? (Number.isInteger(v) ? int(v) : fmt(v)) : (v ?? 'n/a'))
  return html`<section id="index"><h2>Decision Intelligence Index</h2>
<p class="composite">Index <strong data-index="composite" data-value="${data(s.composite)}">${s.composite === null ? 'not published' : s.composite.toFixed(1)}</strong> <span class="muted">(version <span data-index="index_version" data-value="${data(s.index_version)}">${s.index_version}</span>, snapshot ${s.seq} taken ${s.taken_at})</span></p>
${s.insufficient_note ? html`<p class="note" data-index="insufficient_note">${s.insufficient_note}</p>` : ''}
${chain}
<div class="cols"><table><caption>Components</caption><tbody>
${COMPONENTS.map(([k, label]) => html`<tr><th>${label}</th><td data-component="${data(k)}" data-value="${data(s.components[k])}">${fmt(s.components[k])}</td></tr>`)}
<tr><th>reference Brier (base-rate forecaster)</th><td data-benchmark="reference_brier" data-value="${data(s.benchmarks.reference_brier)}">${fmt(s.benchmarks.reference_brier)}</td></tr>
${crowdRows(s.benchmarks.crowd)}
${modalClassRow(s.modal_class)}
</tbody></table>
<table><caption>Evidence</caption><tbody>
${EVIDENCE.map(([k, label]) => html`<tr><th>${label}</th><td data-evidence="${data(k)}" data-value="${data(s.evidence[k])}">${value(s.evidence[k])}</td></tr>`)}
<tr><th>published calibration bands</th><td data-index="published_bands" data-value="${data(s.published_bands)}">${s.published_bands}</td></tr>
<tr><th>price ladder rung</th><td data-index="rung" data-value="${data(s.rung)}">${s.rung}</td></tr>
<tr><th>active release</th><td data-index="active_release" data-value="${data(s.active_release?.version ?? null)}">${s.active_release?.version ?? 'none'}</td></tr>
</tbody></table></div>
<p class="muted">Row hash <code data-index="row_hash" data-value="${data(s.row_hash)}">${s.row_hash}</code></p>
</section>`
}

/**
 * The secondary modal-class view (index 1.1.0 on): every claim graded as one binary event, a distribution question by
 * its chosen class only; the components above score a distribution question by its whole distribution.
 */
function modalClassRow(m: IntelligenceSnapshot['modal_class']): Html {
  if (!m) return html``
  return html`<tr><th>secondary: modal class only (${int(m.n)} claims; not in the index)</th><td data-secondary="modal_class" data-value="${data(m.brier)}" data-skill="${data(m.skill_vs_reference)}" data-ece="${data(m.ece)}">Brier ${fmt(m.brier)}, skill ${fmt(m.skill_vs_reference)}, ECE ${fmt(m.ece)}</td></tr>`
}

/**
 * The crowd benchmark (spec, Limits: at least 10 graded calls per question): the players' mean Brier beside the
 * house's on the same resolved pairs; below its floor the snapshot has no crowd line, and the page says why.
 */
function crowdRows(crowd: { brier: number; n: number; house_brier?: number } | undefined): Html {
  if (!crowd) return html`<tr><th>crowd Brier (graded player calls)</th><td data-benchmark="crowd" data-value="null">below the floor of 10 graded calls per question</td></tr>`
  return html`<tr><th>crowd Brier (${int(crowd.n)} graded player calls)</th><td data-benchmark="crowd" data-value="${data(crowd.brier)}" data-n="${data(crowd.n)}">${fmt(crowd.brier)}</td></tr>
${crowd.house_brier === undefined ? '' : html`<tr><th>house Brier on the same calls</th><td data-benchmark="crowd_house" data-value="${data(crowd.house_brier)}">${fmt(crowd.house_brier)}</td></tr>`}`
}

function curveSection(f: TrackRecordFigures): Html {
  const c = f.curve
  if (!f.chain_verified) {
    return html`<section id="curve"><h2>Learning curve</h2><p class="warn" data-curve="withheld">Withheld: the snapshot chain does not verify, so the curve would restate published history (the API answers 503 STALE_DATA).</p></section>`
  }
  const rows = c.points.map(
    (p) => html`<tr data-point-taken-at="${data(p.taken_at)}"><td>${p.taken_at}</td><td class="num">${int(p.n_cum)}</td><td class="num">${fmt(p.brier)}</td><td class="num">${fmt(p.logloss)}</td><td class="num">${fmt(p.ece)}</td><td>${p.release ?? ''}</td></tr>`,
  )
  return html`<section id="curve"><h2>Learning curve</h2>
<p>One point per snapshot of index version <span data-curve="index_version" data-value="${data(c.index_version)}">${c.index_version}</span> (<span data-curve="points" data-value="${data(c.points.length)}">${c.points.length}</span> points; a gap in time stays a gap). ${c.fit ? html`Fit <span class="fit-legend">BS(n) = a·n<sup>−b</sup> + c</span>: a = ${fmt(c.fit.a)}, b = ${fmt(c.fit.b)}${c.fit.b_ci ? html` (95 % interval ${fmt(c.fit.b_ci[0])}–${fmt(c.fit.b_ci[1])})` : ''}, c = ${fmt(c.fit.c)}.` : 'No fit.'}</p>
<p class="note" data-curve="note">${c.note}</p>
${learningCurveChart(c)}
<details><summary>Points</summary><table class="data"><thead><tr><th>taken at</th><th>n</th><th>Brier</th><th>log loss</th><th>ECE</th><th>release</th></tr></thead><tbody>${rows}</tbody></table></details>
</section>`
}

function questionSection(q: TrackRecordQuestion): Html {
  const cal = q.calibration
  const prior = q.prior
  const priorLine = prior
    ? html`Base rate ${pct(prior.rate)}${prior.interval ? html` (Wilson 95 % ${pct(prior.interval[0])}–${pct(prior.interval[1])})` : ''} over n = ${int(prior.n)}, ${prior.verdict.replaceAll('_', ' ')}.`
    : html`No base rate: ${(q.reason ?? 'none').replaceAll('_', ' ')}.`
  const rows = cal.buckets.map((b, i) => {
    const bar = b.published && b.mean_predicted !== null ? consistencyInterval(b.n, b.mean_predicted, CONSISTENCY_LEVEL) : null
    return html`<tr class="${b.published ? '' : 'unpublished'}" data-bucket="${i}" data-n="${data(b.n)}" data-published="${data(b.published)}"><td>${i === 0 ? '[' : '('}${b.lo.toFixed(1)}, ${b.hi.toFixed(1)}]</td><td class="num">${int(b.n)}</td><td class="num">${fmt(b.mean_predicted)}</td><td class="num">${fmt(b.realized_frequency)}</td><td class="num">${bar ? `${fmt(bar.lower)}–${fmt(bar.upper)}` : ''}</td><td>${b.published ? 'yes' : 'counts only'}</td></tr>`
  })
  const sc = cal.scores
  const scoresLine = sc
    ? html`<p data-scores="${data(sc.scored_as)}" data-brier="${data(sc.brier)}" data-skill="${data(sc.skill_vs_reference)}" data-n="${data(sc.n)}">${sc.scored_as === 'distribution' ? 'Scored by its whole distribution (multi-class Brier Σ (p − o)² against the realized class frequencies)' : 'Scored'}: Brier ${fmt(sc.brier)} (reference ${fmt(sc.reference_brier)}), skill ${fmt(sc.skill_vs_reference)}, log loss ${fmt(sc.logloss)}, ECE ${fmt(sc.ece)} over n = ${int(sc.n)}.</p>`
    : ''
  return html`<section class="question" id="q-${q.question_id}" data-question-id="${data(q.question_id)}" data-calibration-n="${data(cal.n)}" data-calibration-published="${data(cal.published)}" data-buckets-grade="${data(cal.buckets_grade)}">
<h3>${q.label} <span class="muted"><code>${q.question_id}</code>, ${q.answer}</span></h3>
<p>${priorLine} Calibration over n = ${int(cal.n)} realized outcomes: ${cal.published ? 'published' : `below the floor of ${cal.n_floor}`}.</p>
${scoresLine}
<p class="note">${cal.note}</p>
${cal.buckets_grade === 'modal_class' ? html`<p class="muted">Secondary view: the diagram grades the chosen (modal) class only; each class's own reliability is under "Per class".</p>` : ''}
${cal.n > 0 ? reliabilityDiagram(q) : html`<p class="empty">No realized outcome yet.</p>`}
<details><summary>Bands</summary><table class="data"><thead><tr><th>band</th><th>n</th><th>mean predicted</th><th>realized</th><th>95 % consistency</th><th>published</th></tr></thead><tbody>${rows}</tbody></table></details>
${classesTable(cal.classes)}
</section>`
}

/** A distribution question's one-vs-rest reliability per class: p = the class's probability, realized = it happened. */
function classesTable(classes: CalibrationReport['classes']): Html {
  if (!classes) return html``
  const rows = classes.flatMap((c) =>
    c.buckets.map((b, i) => ({ c, b, i })).filter(({ b }) => b.n > 0).map(({ c, b, i }) =>
      html`<tr class="${b.published ? '' : 'unpublished'}" data-class="${data(c.class)}" data-class-bucket="${i}" data-n="${data(b.n)}" data-published="${data(b.published)}"><td>${c.class}</td><td>${i === 0 ? '[' : '('}${b.lo.toFixed(1)}, ${b.hi.toFixed(1)}]</td><td class="num">${int(b.n)}</td><td class="num">${fmt(b.mean_predicted)}</td><td class="num">${fmt(b.realized_frequency)}</td><td>${b.published ? 'yes' : 'counts only'}</td></tr>`),
  )
  return html`<details data-classes="${data(classes.length)}"><summary>Per class (one-vs-rest reliability)</summary><table class="data"><thead><tr><th>class</th><th>band</th><th>n</th><th>mean predicted</th><th>realized</th><th>published</th></tr></thead><tbody>${rows}</tbody></table></details>`
}

function releasesSection(f: TrackRecordFigures): Html {
  const list = f.releases ?? []
  if (list.length === 0) {
    return html`<section id="releases"><h2>Release history</h2><p class="empty" data-releases="none">No release yet.</p></section>`
  }
  const gates = (r: ReleaseFeedItem) =>
    r.gate_verdicts ? Object.entries(r.gate_verdicts).map(([g, v]) => html`<span class="${v.met ? 'ok' : 'warn'}" data-gate="${data(g)}" data-met="${data(v.met)}">${g} ${v.met ? '✓' : '✗'}</span> `) : html`<span class="muted">not evaluated</span>`
  const rows = list.map((r) => {
    const e = r.evaluation
    return html`<tr data-release-version="${data(r.version)}" data-status="${data(r.status)}" data-delta-brier="${data(e?.delta_brier ?? null)}"><td><code>${r.version}</code></td><td>${r.status}</td><td>${r.parent ?? ''}</td><td>${r.created_at}</td><td>${r.activated_at ?? ''}</td><td class="num">${int(r.dataset.n_realized)}</td><td class="num">${e ? html`${fmt(e.delta_brier)}${e.delta_brier_ci ? html` [${fmt(e.delta_brier_ci[0])}, ${fmt(e.delta_brier_ci[1])}]` : ''}` : ''}</td><td>${gates(r)}</td></tr>`
  })
  return html`<section id="releases"><h2>Release history</h2>
<p>Sealed releases, newest first as the feed lists them; Δ Brier is candidate minus incumbent on the holdout (below zero is better) with its 95 % interval.</p>
<table class="data"><thead><tr><th>version</th><th>status</th><th>parent</th><th>created</th><th>activated</th><th>n realized</th><th>Δ Brier</th><th>gates</th></tr></thead><tbody>${rows}</tbody></table>
</section>`
}

/**
 * The banner above everything: SIMULATED, REPLAY or LIVE, and what that means, from the same object as every answer's
 * x-svc-data-time header (the header value is on the banner too, so a reader can match the two).
 */
function dataBanner(d: TrackRecordFigures['data']): Html {
  if (!d) return html``
  const { time, label, header } = d
  return html`<div class="banner ${label.kind}${time.quality === 'degraded' ? ' degraded' : ''}" role="note" data-data-kind="${data(label.kind)}" data-data-time="${data(time)}">
<strong>${label.title}</strong> ${label.standing}<br><span data-data-now>${label.now}</span> <span class="muted">x-svc-data-time: <code data-data-header>${header}</code></span></div>`
}

const STYLE = `
body{font:15px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;max-width:1080px;padding:16px 20px;color:#1d2330;background:#fff}
h1{font-size:1.6em;margin:.2em 0}h2{border-bottom:1px solid #d8dde6;padding-bottom:4px;margin-top:1.6em}h3{margin-bottom:.2em}
.muted{color:#667085;font-weight:normal}.note{color:#475467;font-size:.92em}.empty{color:#667085;font-style:italic}
.banner{margin:8px 0 12px;padding:10px 14px;border-radius:6px;border:2px solid}.banner strong{letter-spacing:.06em}
.banner.simulated{background:#fffaeb;border-color:#dc6803;color:#7a2e0e}.banner.replay{background:#eff8ff;border-color:#1849a9;color:#102a56}
.banner.live{background:#ecfdf3;border-color:#067647;color:#054f31}.banner.live.degraded{background:#fef3f2;border-color:#b42318;color:#7a271a}
.ok{color:#067647}.warn{color:#b42318;font-weight:600}code{font-size:.9em;word-break:break-all}
.composite{font-size:1.3em}.cols{display:flex;flex-wrap:wrap;gap:24px}.cols table{min-width:320px}
table{border-collapse:collapse}caption{text-align:left;font-weight:600;padding:4px 0}th,td{padding:3px 8px;text-align:left;border-bottom:1px solid #eef0f4}
td.num{text-align:right;font-variant-numeric:tabular-nums}tr.unpublished td{color:#98a2b3}
.questions{display:grid;grid-template-columns:repeat(auto-fill,minmax(380px,1fr));gap:8px 24px}
.chart{max-width:100%;height:auto;font-size:11px}.chart .grid{stroke:#eef0f4}.chart .diagonal{stroke:#98a2b3;stroke-dasharray:4 3}
.chart .consistency{fill:#b2ccff;fill-opacity:.6}.chart .point{fill:#1849a9}.chart .fit{fill:none;stroke:#dc6803;stroke-width:2}
.chart .tick,.chart .count{fill:#667085}.chart .count.unpublished{fill:#c0c6d0}.chart .axis{fill:#344054}
details{margin:.4em 0 1em}summary{cursor:pointer;color:#1849a9}footer{margin-top:2em;color:#667085;font-size:.88em}
`

export function renderTrackRecordPage(f: TrackRecordFigures): string {
  const page = html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Track record · Decision Intelligence Service</title><style>${new Html(STYLE)}</style></head>
<body data-generated-at="${data(f.generated_at)}">
<header>${dataBanner(f.data)}<h1>Track record</h1>
<p>Every answer this service sells is recorded before its outcome is known, resolved at its horizon and scored here. The figures are read from the batch tables by the same calls as the JSON routes: <a href="${f.api.intelligence}">${f.api.intelligence}</a>, <a href="${f.api.curve}">${f.api.curve}</a>, <a href="${f.api.calibration}">${f.api.calibration}</a>, <a href="${f.api.priors}">${f.api.priors}</a> and <a href="${f.api.releases}">${f.api.releases}</a>.</p></header>
${indexSection(f)}
${curveSection(f)}
<section id="calibration"><h2>Calibration per question</h2>
<p>Each dot is a published decile band ('(a,b]', the first [0, 0.1]): the band's mean predicted probability against the share of its outcomes that obtained. A band is plotted from ${CALIBRATION_BAND_FLOOR} realized outcomes once its question has ${QUESTION_CALIBRATION_FLOOR}; the others show their counts only (below the axis, grey). The shaded bar is a ${CONSISTENCY_LEVEL * 100} % consistency bar: the exact central binomial interval of realized frequency a perfectly calibrated forecaster would show with the band's n and mean forecast, Binomial(n, mean predicted) / n. A dot outside its bar is evidence of miscalibration in that band.</p>
<div class="questions">${f.questions.map(questionSection)}</div></section>
${releasesSection(f)}
<footer>Generated ${f.generated_at}. No script, no external assets.</footer>
</body></html>
`
  return page.text
}
