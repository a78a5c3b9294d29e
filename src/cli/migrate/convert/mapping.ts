import { access } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { isMap, isScalar, LineCounter, parseDocument, type Document } from 'yaml';
import type { CsvOptions } from './csv-encoding.ts';
import { UnreadableFile, readHeader } from './csv-rows.ts';
import { FILE_KINDS, POINT_CHILDREN, TARGETS, type FileKind, type Target } from './targets.ts';
import { compileTransform, RowProblem, type Transform, type Value } from './transforms.ts';

// The mapping file (YAML), checked whole before any data row is read: every problem is a
// MappingError naming the line of the mapping at fault, and the command exits 2 on it.

export class MappingError extends Error {}

export interface FieldMapping {
  target: string;
  spec: Target;
  /** Index of the source column in the file's projected row; undefined for a constant. */
  index?: number;
  column?: string;
  constant?: string;
  transforms: Transform[];
}

export interface FileMapping {
  kind: FileKind;
  /** As the mapping names it (the rejects file says this). */
  name: string;
  path: string;
  csv: CsvOptions;
  /** The columns a row is projected on: the key first, then the link (if any), then the mapped ones. */
  columns: string[];
  /** Their positions in the file's header. */
  positions: number[];
  hasLink: boolean;
  fields: FieldMapping[];
  /** The join key from the key column's text: the account number's transforms when it is that column. */
  keyOf?: ((raw: string) => string) | undefined;
}

export interface Mapping { files: FileMapping[] }

const TOP_KEYS = ['key', 'csv', 'files'];
const FILE_KEYS = ['path', 'key', 'link', 'csv', 'fields'];
const CSV_KEYS = ['delimiter', 'quote', 'encoding'];
const ENCODINGS = ['utf8', 'utf-8', 'latin1', 'windows-1252', 'cp1252'];

type Path = (string | number)[];

export async function loadMapping(mappingPath: string, source: string): Promise<Mapping> {
  const lines = new LineCounter();
  const doc = parseDocument(source, { lineCounter: lines, uniqueKeys: true });
  const at = (offset: number | undefined) => `${mappingPath}:${offset === undefined ? 1 : lines.linePos(offset).line}`;
  if (doc.errors.length > 0) throw new MappingError(`${at(doc.errors[0]!.pos[0])}: ${doc.errors[0]!.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '')}`);
  const where = positions(doc, at);
  const fail = (path: Path, message: string, key = false): never => { throw new MappingError(`${key ? where.key(path) : where.value(path)}: ${message}`); };

  const root = doc.toJS() as unknown;
  if (!isObject(root)) return fail([], 'the mapping must be a YAML mapping with key, files and (optionally) csv');
  unknownKeys(root, TOP_KEYS, [], fail);
  const defaultKey = root.key === undefined ? undefined : textOf(root.key, ['key'], fail);
  const defaultCsv = csvOptions(root.csv, ['csv'], {}, fail);
  if (!isObject(root.files)) return fail(root.files === undefined ? [] : ['files'], 'files must map each kind of file (accounts, customers, …) to its path and fields');
  if (!root.files.accounts) fail(['files'], 'files must include accounts');

  const base = dirname(resolve(mappingPath));
  const files: FileMapping[] = [];
  for (const [kind, raw] of Object.entries(root.files)) {
    const at = ['files', kind];
    if (!(FILE_KINDS as readonly string[]).includes(kind)) fail(at, `unknown file kind "${kind}" (known: ${FILE_KINDS.join(', ')})`, true);
    files.push(await fileMapping(kind as FileKind, raw, at, { base, defaultKey, defaultCsv }, fail));
  }
  const points = files.find((f) => f.kind === 'supply_points');
  for (const file of files) {
    if (!POINT_CHILDREN.includes(file.kind as never)) continue;
    if (!points) fail(['files', file.kind], `${file.kind} belong to supply points: the mapping needs a supply_points file`, true);
    if (!file.hasLink || !points!.hasLink) fail(['files', file.hasLink ? 'supply_points' : file.kind], `${file.kind} rows name their supply point: give link (the supply point's column) in supply_points and in ${file.kind}`, true);
  }
  const keyOf = accountNumberOf(files.find((f) => f.kind === 'accounts')!);
  for (const file of files) file.keyOf = keyOf;
  // The accounts file leads the join: it comes first whatever the order written.
  files.sort((a, b) => (a.kind === 'accounts' ? -1 : b.kind === 'accounts' ? 1 : FILE_KINDS.indexOf(a.kind) - FILE_KINDS.indexOf(b.kind)));
  return { files };
}

interface Defaults { base: string; defaultKey: string | undefined; defaultCsv: CsvOptions }
type Fail = (path: Path, message: string, key?: boolean) => never;

async function fileMapping(kind: FileKind, raw: unknown, at: Path, defaults: Defaults, fail: Fail): Promise<FileMapping> {
  if (typeof raw === 'string') raw = { path: raw };
  if (!isObject(raw)) return fail(at, `${kind} must give path and fields`);
  unknownKeys(raw, FILE_KEYS, at, fail);
  if (raw.path === undefined) fail(at, `${kind} has no path`, true);
  const path = resolve(defaults.base, textOf(raw.path, [...at, 'path'], fail));
  await access(path).catch(() => fail([...at, 'path'], `file ${path} does not exist or cannot be read`));
  const key = raw.key === undefined ? defaults.defaultKey : textOf(raw.key, [...at, 'key'], fail);
  if (key === undefined) fail(at, `${kind} has no key column: give key here or at the top of the mapping`, true);
  const link = raw.link === undefined ? undefined : textOf(raw.link, [...at, 'link'], fail);
  const csv = csvOptions(raw.csv, [...at, 'csv'], defaults.defaultCsv, fail);
  let header: string[];
  try { header = await readHeader(path, csv); } catch (error) {
    return fail([...at, 'path'], error instanceof UnreadableFile ? error.message : `cannot read the header of ${path}: ${(error as Error).message}`);
  }
  const position = (column: string, path: Path) => {
    const index = header.indexOf(column);
    if (index < 0) fail(path, `column "${column}" is not in the header of ${String(raw.path)} (${header.join(', ')})`);
    // Which of two columns of one name the legacy system meant cannot be guessed.
    if (header.lastIndexOf(column) !== index) fail(path, `column "${column}" is in the header of ${String(raw.path)} more than once (${header.join(', ')}): rename one`);
    return index;
  };
  const columns = [key!];
  const positions = [position(key!, raw.key === undefined ? (defaults.defaultKey === undefined ? at : ['key']) : [...at, 'key'])];
  if (link !== undefined) { columns.push(link); positions.push(position(link, [...at, 'link'])); }

  const fields: FieldMapping[] = [];
  const rawFields = raw.fields ?? {};
  if (!isObject(rawFields)) return fail([...at, 'fields'], 'fields must map each target field to its source');
  const targets = TARGETS[kind];
  for (const [target, source] of Object.entries(rawFields)) {
    const fieldAt = [...at, 'fields', target];
    const spec = targets[target];
    if (!spec) fail(fieldAt, `unknown target field "${target}" for ${kind} (known: ${Object.keys(targets).join(', ')})`, true);
    fields.push(fieldMapping(target, spec!, source, fieldAt, (column, path) => {
      let index = columns.indexOf(column);
      if (index < 0) { positions.push(position(column, path)); columns.push(column); index = columns.length - 1; }
      return index;
    }, fail));
  }
  for (const [target, spec] of Object.entries(targets)) {
    if (spec.required && !fields.some((f) => f.target === target)) fail([...at, 'fields'], `${kind} needs a source for the required field ${target}`, true);
  }
  return { kind, name: raw.path as string, path, csv, columns, positions, hasLink: link !== undefined, fields };
}

function fieldMapping(target: string, spec: Target, source: unknown, at: Path, columnIndex: (column: string, at: Path) => number, fail: Fail): FieldMapping {
  if (typeof source === 'string') return { target, spec, column: source, index: columnIndex(source, at), transforms: [] };
  if (!isObject(source)) return fail(at, `the source of ${target} is a column name, {column: …, transform: …} or {value: …}`);
  if ('value' in source) {
    if (Object.keys(source).length !== 1) fail(at, `a constant is {value: …} alone`);
    if (source.value === null || typeof source.value === 'object') fail([...at, 'value'], 'a constant is a plain value');
    return { target, spec, constant: String(source.value), transforms: [] };
  }
  unknownKeys(source, ['column', 'transform'], at, fail);
  if (source.column === undefined) fail(at, `the source of ${target} needs column (or value for a constant)`);
  const column = textOf(source.column, [...at, 'column'], fail);
  const list = source.transform === undefined ? [] : Array.isArray(source.transform) ? source.transform : [source.transform];
  const transforms = list.map((t, i) => {
    try { return compileTransform(t); } catch (error) {
      return fail(Array.isArray(source.transform) ? [...at, 'transform', i] : [...at, 'transform'], (error as Error).message);
    }
  });
  return { target, spec, column, index: columnIndex(column, [...at, 'column']), transforms };
}

/**
 * Accounts join their rows on the key column. When the account number is that column with
 * transforms (`[trim, upper]`), the join uses it as mapped, in every file: `A1 ` and `a1` are the
 * account A1, a second accounts row of them is a duplicate, and their child rows are A1's.
 */
function accountNumberOf(accounts: FileMapping): ((raw: string) => string) | undefined {
  const field = accounts.fields.find((f) => f.target === 'external_account_number');
  if (!field || field.index !== 0 || field.transforms.length === 0) return undefined;
  return (raw) => {
    try {
      const value = field.transforms.reduce<Value>((v, transform) => transform(v), raw);
      return typeof value === 'string' ? value : raw;
    } catch (error) {
      // The account row is rejected when it is mapped; its key is the text as written until then.
      if (error instanceof RowProblem) return raw;
      throw error;
    }
  };
}

function csvOptions(raw: unknown, at: Path, inherited: CsvOptions, fail: Fail): CsvOptions {
  if (raw === undefined) return inherited;
  if (!isObject(raw)) return fail(at, `csv takes ${CSV_KEYS.join(', ')}`);
  unknownKeys(raw, CSV_KEYS, at, fail);
  const options = { ...inherited };
  if (raw.delimiter !== undefined) options.delimiter = textOf(raw.delimiter, [...at, 'delimiter'], fail);
  if (raw.quote !== undefined) options.quote = textOf(raw.quote, [...at, 'quote'], fail);
  if (raw.encoding !== undefined) {
    const encoding = textOf(raw.encoding, [...at, 'encoding'], fail).toLowerCase();
    if (!ENCODINGS.includes(encoding)) fail([...at, 'encoding'], `encoding must be one of ${ENCODINGS.join(', ')}`);
    options.encoding = encoding === 'latin1' ? 'latin1' : encoding === 'windows-1252' || encoding === 'cp1252' ? 'windows-1252' : 'utf8';
  }
  return options;
}

function unknownKeys(object: Record<string, unknown>, known: string[], at: Path, fail: Fail): void {
  for (const key of Object.keys(object)) if (!known.includes(key)) fail([...at, key], `unknown setting "${key}" (known here: ${known.join(', ')})`, true);
}

function textOf(value: unknown, at: Path, fail: Fail): string {
  if (typeof value === 'number') return String(value);
  if (typeof value !== 'string' || value === '') return fail(at, 'expected a non-empty text');
  return value;
}

const isObject = (value: unknown): value is Record<string, unknown> => !!value && typeof value === 'object' && !Array.isArray(value);

/** `file:line` of a node (its value, or its key in the parent map), falling back to the nearest ancestor. */
function positions(doc: Document, at: (offset: number | undefined) => string) {
  const value = (path: Path): string => {
    for (let n = path.length; n >= 0; n--) {
      const node = doc.getIn(path.slice(0, n), true) as { range?: [number, number, number] } | undefined;
      if (node?.range) return at(node.range[0]);
    }
    return at(undefined);
  };
  const key = (path: Path): string => {
    if (path.length === 0) return value(path);
    const parent = doc.getIn(path.slice(0, -1), true);
    const pair = isMap(parent) ? parent.items.find((p) => isScalar(p.key) && String(p.key.value) === String(path.at(-1))) : undefined;
    return isScalar(pair?.key) && pair.key.range ? at(pair.key.range[0]) : value(path);
  };
  return { value, key };
}
