// The streams that also come as CSV (a job's records, reconciliation exceptions) choose by the
// request's Accept header, with its weights: `text/csv` wins when it is weighted above NDJSON, or
// named outright at the same weight where NDJSON is only covered by a wildcard. No Accept, `*/*`,
// `text/csv;q=0` or a type the operation does not offer: NDJSON, the default.
const NDJSON = 'application/x-ndjson';
const CSV = 'text/csv';

interface Range { type: string; subtype: string; q: number }

function rangesOf(accept: string): Range[] {
  return accept.split(',').flatMap((part) => {
    const [media, ...params] = part.split(';').map((p) => p.trim().toLowerCase());
    const [type, subtype] = (media ?? '').split('/');
    if (!type || !subtype) return [];
    const weight = params.find((p) => p.startsWith('q='));
    const q = weight === undefined ? 1 : Number(weight.slice(2));
    return Number.isFinite(q) ? [{ type, subtype, q: Math.min(Math.max(q, 0), 1) }] : [];
  });
}

/** The weight the ranges give `mediaType` (the most specific range that covers it), and whether it is named outright. */
function weightOf(ranges: Range[], mediaType: string): { q: number; named: boolean } {
  const [type, subtype] = mediaType.split('/');
  const exact = ranges.find((r) => r.type === type && r.subtype === subtype);
  if (exact) return { q: exact.q, named: true };
  const covering = ranges.find((r) => r.type === type && r.subtype === '*') ?? ranges.find((r) => r.type === '*' && r.subtype === '*');
  return { q: covering?.q ?? 0, named: false };
}

export function prefersCsv(accept: string | undefined): boolean {
  if (!accept) return false;
  const ranges = rangesOf(accept);
  const csv = weightOf(ranges, CSV);
  const ndjson = weightOf(ranges, NDJSON);
  if (csv.q === 0) return false;
  return csv.q > ndjson.q || (csv.q === ndjson.q && csv.named && !ndjson.named);
}
