/** Datetimes on the wire: UTC with whole seconds, 'YYYY-MM-DDTHH:MM:SSZ' (spec 2.1). */
export function utcSeconds(value: Date): string {
  return `${value.toISOString().slice(0, 19)}Z`;
}
