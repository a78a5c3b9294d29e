import type { FieldMapping, FileMapping } from './mapping.ts';
import type { Row } from './csv-rows.ts';
import { ADDRESS_FIELDS, type ChildKind } from './targets.ts';
import { RowProblem, typed, type Value } from './transforms.ts';

// One migration record from an account row and the child rows of the same key. A child row that
// cannot be mapped is rejected alone and the record goes on without it; an account row that cannot
// be mapped takes its children with it.

export interface Reject { file: FileMapping; row: number; key: string; column: string; reason: RowProblem['reason']; detail: string }

/** The row's fields as target → JSON value, or a RowProblem naming the column at fault. */
class FieldProblem extends RowProblem {
  constructor(readonly column: string, problem: RowProblem) { super(problem.reason, problem.message); }
}

type Json = Record<string, unknown>;

function mapRow(file: FileMapping, row: Row): Json {
  if (row.fault) throw new FieldProblem(row.fault.column, new RowProblem(row.fault.reason, row.fault.detail));
  const out: Json = {};
  for (const field of file.fields) {
    const column = field.column ?? '';
    try {
      const value = fieldValue(field, row);
      if (value !== undefined) setPath(out, field.target, value);
    } catch (error) {
      if (error instanceof RowProblem) throw new FieldProblem(column, error);
      throw error;
    }
  }
  return out;
}

function fieldValue(field: FieldMapping, row: Row): unknown {
  const raw = field.constant ?? row.values[field.index!] ?? '';
  if (raw.trim() === '') {
    if (field.spec.required) throw new RowProblem('required', `${field.column} is empty and ${field.target} is required`);
    return undefined;
  }
  let value: Value = raw;
  for (const transform of field.transforms) value = transform(value);
  const column = field.column ?? field.target;
  if (field.target.includes('[]')) return (Array.isArray(value) ? value : [value]).map((v) => typed(v, field.spec, column));
  // A value its transforms leave empty (a split of ";;", a map to "") is missing, as an empty cell is.
  if (Array.isArray(value) ? value.length === 0 : value.trim() === '') {
    if (field.spec.required) throw new RowProblem('required', `${column} is empty after its transforms and ${field.target} is required`);
    return undefined;
  }
  return typed(Array.isArray(value) ? value.join(' ') : value, field.spec, column);
}

/** `a.b` sets a nested object; `list[].field` with a list of values sets one item per value. */
function setPath(target: Json, path: string, value: unknown): void {
  const list = path.indexOf('[].');
  if (list >= 0) {
    const field = path.slice(list + 3);
    setPath(target, path.slice(0, list), (value as unknown[]).map((v) => ({ [field]: v })));
    return;
  }
  if (!path.includes('.')) {
    target[path] = value;
    return;
  }
  const parts = path.split('.');
  let node = target;
  for (let i = 0; i < parts.length - 1; i++) node = (node[parts[i]!] ??= {}) as Json;
  node[parts.at(-1)!] = value;
}

const problemOf = (file: FileMapping, row: Row, error: unknown): Reject => {
  if (!(error instanceof FieldProblem)) throw error;
  return { file, row: row.line, key: row.values[0]!, column: error.column, reason: error.reason, detail: error.message };
};

/** The record of one account, or null when its account row is rejected; every rejected row is passed to `reject`. */
export function buildRecord(accounts: FileMapping, accountRow: Row, children: Map<FileMapping, Row[]>, reject: (r: Reject) => void): Json | null {
  let fields: Json;
  try { fields = mapRow(accounts, accountRow); } catch (error) {
    const problem = problemOf(accounts, accountRow, error);
    reject(problem);
    for (const [file, rows] of children) {
      for (const row of rows) reject({ file, row: row.line, key: row.values[0]!, column: '', reason: 'account_rejected', detail: `its account (${accounts.name} row ${accountRow.line}) was rejected` });
    }
    return null;
  }
  const { payment_instruction: payment, ...account } = fields;
  const record: Json = { account };
  const mapped = new Map<ChildKind, { file: FileMapping; row: Row; json: Json }[]>();
  // A rejected supply point's link, and where it was: its meters and agreements go with it.
  const rejectedPoints = new Map<string, string>();
  for (const [file, rows] of children) {
    const list: { file: FileMapping; row: Row; json: Json }[] = [];
    for (const row of rows) {
      try { list.push({ file, row, json: mapRow(file, row) }); } catch (error) {
        reject(problemOf(file, row, error));
        if (file.kind === 'supply_points' && file.hasLink) rejectedPoints.set(row.values[1]!, `${file.name} row ${row.line}`);
      }
    }
    mapped.set(file.kind as ChildKind, list);
  }
  account.customers = (mapped.get('customers') ?? []).map((c) => c.json);
  account.supply_addresses = supplyAddresses(mapped, rejectedPoints, reject);
  for (const kind of ['statements', 'transactions', 'notes'] as const) {
    const items = mapped.get(kind);
    if (items && items.length > 0) record[kind] = items.map((i) => i.json);
  }
  if (payment) record.payment_instruction = payment;
  return record;
}

function supplyAddresses(mapped: Map<ChildKind, { file: FileMapping; row: Row; json: Json }[]>, rejectedPoints: Map<string, string>, reject: (r: Reject) => void): Json[] {
  const addresses = new Map<string, Json>();
  const points = new Map<string, Json>();
  for (const { row, json } of mapped.get('supply_points') ?? []) {
    const address: Json = {};
    const point: Json = {};
    for (const [name, value] of Object.entries(json)) (ADDRESS_FIELDS.includes(name) ? address : point)[name] = value;
    const id = JSON.stringify(ADDRESS_FIELDS.map((name) => address[name] ?? null));
    let entry = addresses.get(id);
    if (!entry) addresses.set(id, entry = { ...address, supply_points: [] });
    (entry.supply_points as Json[]).push(point);
    if (row.values.length > 1) points.set(row.values[1]!, point);
  }
  for (const kind of ['agreements', 'meters'] as const) {
    for (const { file, row, json } of mapped.get(kind) ?? []) {
      const point = points.get(row.values[1]!);
      const rejected = rejectedPoints.get(row.values[1]!);
      if (!point && rejected) {
        reject({ file, row: row.line, key: row.values[0]!, column: '', reason: 'supply_point_rejected', detail: `its supply point "${row.values[1]}" (${rejected}) was rejected` });
        continue;
      }
      if (!point) {
        reject({ file, row: row.line, key: row.values[0]!, column: file.columns[1]!, reason: 'orphan', detail: `no supply point "${row.values[1]}" on account ${row.values[0]}` });
        continue;
      }
      if (kind === 'meters') json.registers ??= [];
      ((point[kind] ??= []) as Json[]).push(json);
    }
  }
  return [...addresses.values()];
}
