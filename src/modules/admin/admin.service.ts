import type { Kysely } from 'kysely';
import { PATH_SAFE_PATTERN } from '../../core/identifiers.ts';
import { AppError } from '../../core/errors.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { Database, SupplierStatus } from '../../db/schema.ts';
import * as repo from './admin.repository.ts';
import { generateKey } from './api-keys.ts';

// The service team's operations (D2). The CLI calls these; so do the test factories and the demo seed.
// Failures are AppError, with a one-line reason in the CLI's lower-case style; a field's rule names the
// field (`attr`) and import-admin words it as its flag, so no flag name is written here.

type Db = Kysely<Database>;

export const SUPPLIER_STATUSES = ['ongoing', 'paused', 'complete'] as const satisfies readonly SupplierStatus[];

export interface SupplierView {
  code: string;
  organisation: string;
  status: SupplierStatus;
  customer_emails: boolean;
  documents_root: string;
}

export async function createOrganisation(db: Db, name: string): Promise<{ organisation: string; api_key: string }> {
  requireText(name, 'organisation name');
  return db.transaction().execute(async (trx) => {
    const org = await repo.insertOrganisation(trx, name).catch((error) => {
      if (isUniqueViolation(error)) throw new AppError('already_exists', `organisation "${name}" already exists`);
      throw error;
    });
    const key = generateKey();
    await repo.insertApiKey(trx, org.id, key.prefix, key.secretHash);
    return { organisation: org.name, api_key: key.key };
  });
}

export async function createApiKey(db: Db, organisation: string): Promise<{ organisation: string; api_key: string }> {
  const org = await repo.findOrganisationByName(db, organisation);
  if (!org) throw new AppError('not_found', `no organisation named "${organisation}"`);
  const key = generateKey();
  await repo.insertApiKey(db, org.id, key.prefix, key.secretHash);
  return { organisation: org.name, api_key: key.key };
}

/** Accepts the prefix or the whole key, so an operator can paste either. */
export async function revokeApiKey(db: Db, keyOrPrefix: string): Promise<{ revoked: string }> {
  const prefix = keyOrPrefix.split('.')[0] ?? '';
  const revoked = await repo.revokeApiKey(db, prefix);
  if (!revoked) {
    const exists = await repo.findApiKeyByPrefix(db, prefix);
    throw (exists
      ? new AppError('conflict', `key ${prefix} is already revoked`)
      : new AppError('not_found', `no API key with prefix "${prefix}"`));
  }
  return { revoked: revoked.prefix };
}

export interface ApiKeyView { prefix: string; created_at: string; revoked_at: string | null }

/** An organisation's keys, oldest first: the prefix that names each, never a secret (only its hash is stored). */
export async function listApiKeys(db: Db, organisation: string): Promise<{ organisation: string; api_keys: ApiKeyView[] }> {
  const org = await repo.findOrganisationByName(db, organisation);
  if (!org) throw new AppError('not_found', `no organisation named "${organisation}"`);
  const rows = await repo.apiKeysOf(db, org.id);
  return {
    organisation: org.name,
    api_keys: rows.map((r) => ({ prefix: r.prefix, created_at: r.created_at.toISOString(), revoked_at: r.revoked_at?.toISOString() ?? null })),
  };
}

export interface SupplierOptions {
  status?: SupplierStatus | undefined;
  customerEmails?: boolean | undefined;
  documentsRoot?: string | undefined;
}

export async function createSupplier(db: Db, code: string, organisation: string, options: SupplierOptions = {}): Promise<SupplierView> {
  requireCode(code);
  const org = await repo.findOrganisationByName(db, organisation);
  if (!org) throw new AppError('not_found', `no organisation named "${organisation}"`);
  const row = await repo.insertSupplier(db, {
    code,
    organisation_id: org.id,
    ...(options.status ? { status: requireStatus(options.status) } : {}),
    ...(options.customerEmails !== undefined ? { customer_emails: options.customerEmails } : {}),
    ...(options.documentsRoot !== undefined ? { documents_root: requireRoot(options.documentsRoot) } : {}),
  }).catch((error) => {
    if (isUniqueViolation(error)) throw new AppError('already_exists', `supplier "${code}" already exists`);
    throw error;
  });
  return { code: row.code, organisation: org.name, status: row.status, customer_emails: row.customer_emails, documents_root: row.documents_root };
}

export async function setSupplier(db: Db, code: string, options: SupplierOptions): Promise<SupplierView> {
  const changes = {
    ...(options.status ? { status: requireStatus(options.status) } : {}),
    ...(options.customerEmails !== undefined ? { customer_emails: options.customerEmails } : {}),
    ...(options.documentsRoot !== undefined ? { documents_root: requireRoot(options.documentsRoot) } : {}),
  };
  const row = Object.keys(changes).length > 0
    ? await repo.updateSupplier(db, code, changes)
    : await repo.findSupplierByCode(db, code);
  if (!row) throw new AppError('not_found', `no supplier with code "${code}"`);
  const org = await db.selectFrom('organisations').select('name').where('id', '=', row.organisation_id).executeTakeFirstOrThrow();
  return { code: row.code, organisation: org.name, status: row.status, customer_emails: row.customer_emails, documents_root: row.documents_root };
}

/** Every supplier by code, or those of one organisation. */
export async function listSuppliers(db: Db, organisation?: string): Promise<{ suppliers: SupplierView[] }> {
  let organisationId: number | undefined;
  if (organisation !== undefined) {
    const org = await repo.findOrganisationByName(db, organisation);
    if (!org) throw new AppError('not_found', `no organisation named "${organisation}"`);
    organisationId = org.id;
  }
  const rows = await repo.listSuppliers(db, organisationId);
  return { suppliers: rows.map(toSupplierView) };
}

export async function showSupplier(db: Db, code: string): Promise<SupplierView> {
  const row = (await repo.listSuppliers(db, undefined, code))[0];
  if (!row) throw new AppError('not_found', `no supplier with code "${code}"`);
  return toSupplierView(row);
}

function toSupplierView(row: { code: string; organisation: string; status: SupplierStatus; customer_emails: boolean; documents_root: string }): SupplierView {
  return { code: row.code, organisation: row.organisation, status: row.status, customer_emails: row.customer_emails, documents_root: row.documents_root };
}

export async function createTeam(db: Db, name: string): Promise<{ operations_team: string }> {
  requireText(name, 'team name');
  const row = await repo.insertTeam(db, name).catch((error) => {
    if (isUniqueViolation(error)) throw new AppError('already_exists', `operations team "${name}" already exists`);
    throw error;
  });
  return { operations_team: row.name };
}

export async function listTeams(db: Db): Promise<{ operations_teams: Array<{ name: string; created_at: string }> }> {
  const rows = await repo.listTeams(db);
  return { operations_teams: rows.map((r) => ({ name: r.name, created_at: r.created_at.toISOString() })) };
}

export async function skipAccount(db: Db, supplierCode: string, externalAccountNumber: string) {
  const supplier = await repo.findSupplierByCode(db, supplierCode);
  if (!supplier) throw new AppError('not_found', `no supplier with code "${supplierCode}"`);
  // Only data not yet imported is marked: an imported account stays as it is, and is said to be so.
  const row = await repo.markAccountSkipped(db, supplier.id, externalAccountNumber);
  if (!row) {
    const imported = await repo.findImported(db, supplier.id, externalAccountNumber);
    if (imported) throw new AppError('conflict', `account "${externalAccountNumber}" is already imported as ${imported.number}: it cannot be skipped`);
    throw new AppError('not_found', `no staged data for account "${externalAccountNumber}" of supplier "${supplierCode}"`);
  }
  return { import_supplier: supplierCode, external_account_number: externalAccountNumber, skipped: true as const };
}

export const VENDOR_KINDS = ['http', 'stripe'] as const;

export interface VendorOptions {
  kind?: string | undefined;
  url?: string | undefined;
  /** null removes the secret. */
  secret?: string | null | undefined;
  timeoutMs?: number | undefined;
}

/** What list, show and set print. The secret is the vendor's credential: only whether one is set. */
export interface VendorView { vendor: string; kind: string; url: string; secret_set: boolean; timeout_ms: number; created_at: string }

/** The values' rules, checked before the store is opened (a mistake in them is a command-line mistake). */
export function checkVendorOptions(options: VendorOptions): void {
  if (options.kind !== undefined && !(VENDOR_KINDS as readonly string[]).includes(options.kind)) {
    throw AppError.field('invalid', `must be one of ${VENDOR_KINDS.join(', ')}, got "${options.kind}"`, 'kind');
  }
  if (options.url !== undefined) {
    let url: URL;
    try { url = new URL(options.url); } catch { throw AppError.field('invalid', `"${options.url}" is not a URL`, 'url'); }
    if (!['http:', 'https:'].includes(url.protocol)) throw AppError.field('invalid', 'must be http:// or https://', 'url');
  }
  const timeout = options.timeoutMs;
  if (timeout !== undefined && (!Number.isInteger(timeout) || timeout < 1 || timeout > 120_000)) {
    throw AppError.field('invalid', 'must be a whole number from 1 to 120000', 'timeout_ms');
  }
  if (options.secret === '') throw AppError.field('invalid', 'must not be empty', 'secret');
}

export async function createVendor(db: Db, code: string, options: VendorOptions & { kind: string; url: string }) {
  requireCode(code);
  checkVendorOptions(options);
  const row = await repo.insertVendor(db, {
    code, kind: options.kind, url: options.url.replace(/\/+$/, ''), secret: options.secret ?? null, timeout_ms: options.timeoutMs ?? 5000,
  }).catch((error) => {
    if (isUniqueViolation(error)) throw new AppError('already_exists', `vendor "${code}" already exists`);
    throw error;
  });
  return { vendor: row.code, kind: row.kind, url: row.url };
}

export async function listVendors(db: Db): Promise<{ vendors: VendorView[] }> {
  return { vendors: (await repo.listVendors(db)).map(toVendorView) };
}

export async function showVendor(db: Db, code: string): Promise<VendorView> {
  const row = await repo.findVendorByCode(db, code);
  if (!row) throw vendorNotFound(code);
  return toVendorView(row);
}

/** Changes what is given; the next payment instruction that names the vendor uses it. */
export async function setVendor(db: Db, code: string, options: VendorOptions): Promise<VendorView> {
  checkVendorOptions(options);
  const changes = {
    ...(options.kind !== undefined ? { kind: options.kind } : {}),
    ...(options.url !== undefined ? { url: options.url.replace(/\/+$/, '') } : {}),
    ...(options.secret !== undefined ? { secret: options.secret } : {}),
    ...(options.timeoutMs !== undefined ? { timeout_ms: options.timeoutMs } : {}),
  };
  const row = Object.keys(changes).length > 0 ? await repo.updateVendor(db, code, changes) : await repo.findVendorByCode(db, code);
  if (!row) throw vendorNotFound(code);
  return toVendorView(row);
}

/**
 * Deletes a vendor no payment instruction names. The vendor row is locked first: an instruction
 * being stored for it meanwhile (its foreign key locks the row too) waits, then fails on the deleted row.
 */
export async function deleteVendor(db: Db, code: string): Promise<{ deleted: string }> {
  return db.transaction().execute(async (trx) => {
    const vendor = await repo.lockVendor(trx, code);
    if (!vendor) throw vendorNotFound(code);
    const used = await repo.countVendorInstructions(trx, vendor.id);
    if (used > 0) {
      throw new AppError('conflict', `vendor "${code}" has ${used} payment instruction${used === 1 ? '' : 's'} and cannot be deleted`);
    }
    await repo.deleteVendor(trx, vendor.id);
    return { deleted: code };
  });
}

const vendorNotFound = (code: string) => new AppError('not_found', `no vendor with code "${code}"`);

function toVendorView(row: repo.VendorRow): VendorView {
  return {
    vendor: row.code, kind: row.kind, url: row.url, secret_set: row.secret !== null, timeout_ms: row.timeout_ms, created_at: row.created_at.toISOString(),
  };
}

function requireText(value: string, what: string): void {
  if (!value || value.trim() !== value || value.length > 200) throw new AppError('invalid', `${what} must be 1 to 200 characters with no surrounding spaces`);
}

// Codes appear in URL paths: the same rule as external account numbers (D5).
const PATH_SAFE = new RegExp(PATH_SAFE_PATTERN, 'u');
function requireCode(code: string): void {
  if (code === '' || code.length > 64 || !PATH_SAFE.test(code)) {
    throw new AppError('invalid', `code "${code}" must be 1 to 64 characters, not "." or "..", without "/", control or format characters or surrounding spaces`);
  }
}

function requireStatus(status: string): SupplierStatus {
  if (!(SUPPLIER_STATUSES as readonly string[]).includes(status)) throw AppError.field('invalid', `must be one of ${SUPPLIER_STATUSES.join(', ')}`, 'status');
  return status as SupplierStatus;
}

function requireRoot(root: string): string {
  if (root.length > 500 || root.includes('..') || root.includes('\\')) throw AppError.field('invalid', 'must be a relative path of at most 500 characters, without ".." or "\\"', 'documents_root');
  return root.replace(/^\/+|\/+$/g, '');
}
