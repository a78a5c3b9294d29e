import type { Kysely } from 'kysely';
import { PATH_SAFE_PATTERN } from '../../core/identifiers.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { Database, SupplierStatus } from '../../db/schema.ts';
import * as repo from './admin.repository.ts';
import { generateKey } from './api-keys.ts';

// The service team's operations (D2). The CLI calls these; so do the test factories and the demo seed.
// Failures are AdminError with a one-line reason.
export class AdminError extends Error {
  override name = 'AdminError';
}

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
      if (isUniqueViolation(error)) throw new AdminError(`organisation "${name}" already exists`);
      throw error;
    });
    const key = generateKey();
    await repo.insertApiKey(trx, org.id, key.prefix, key.secretHash);
    return { organisation: org.name, api_key: key.key };
  });
}

export async function createApiKey(db: Db, organisation: string): Promise<{ organisation: string; api_key: string }> {
  const org = await repo.findOrganisationByName(db, organisation);
  if (!org) throw new AdminError(`no organisation named "${organisation}"`);
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
    throw new AdminError(exists ? `key ${prefix} is already revoked` : `no API key with prefix "${prefix}"`);
  }
  return { revoked: revoked.prefix };
}

export interface SupplierOptions {
  status?: SupplierStatus | undefined;
  customerEmails?: boolean | undefined;
  documentsRoot?: string | undefined;
}

export async function createSupplier(db: Db, code: string, organisation: string, options: SupplierOptions = {}): Promise<SupplierView> {
  requireCode(code);
  const org = await repo.findOrganisationByName(db, organisation);
  if (!org) throw new AdminError(`no organisation named "${organisation}"`);
  const row = await repo.insertSupplier(db, {
    code,
    organisation_id: org.id,
    ...(options.status ? { status: requireStatus(options.status) } : {}),
    ...(options.customerEmails !== undefined ? { customer_emails: options.customerEmails } : {}),
    ...(options.documentsRoot !== undefined ? { documents_root: requireRoot(options.documentsRoot) } : {}),
  }).catch((error) => {
    if (isUniqueViolation(error)) throw new AdminError(`supplier "${code}" already exists`);
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
  if (!row) throw new AdminError(`no supplier with code "${code}"`);
  const org = await db.selectFrom('organisations').select('name').where('id', '=', row.organisation_id).executeTakeFirstOrThrow();
  return { code: row.code, organisation: org.name, status: row.status, customer_emails: row.customer_emails, documents_root: row.documents_root };
}

export async function createTeam(db: Db, name: string): Promise<{ operations_team: string }> {
  requireText(name, 'team name');
  const row = await repo.insertTeam(db, name).catch((error) => {
    if (isUniqueViolation(error)) throw new AdminError(`operations team "${name}" already exists`);
    throw error;
  });
  return { operations_team: row.name };
}

export async function skipAccount(db: Db, supplierCode: string, externalAccountNumber: string) {
  const supplier = await repo.findSupplierByCode(db, supplierCode);
  if (!supplier) throw new AdminError(`no supplier with code "${supplierCode}"`);
  const row = await repo.markAccountSkipped(db, supplier.id, externalAccountNumber);
  if (!row) throw new AdminError(`no staged data for account "${externalAccountNumber}" of supplier "${supplierCode}"`);
  if (row.account_id !== null) throw new AdminError(`account "${externalAccountNumber}" is already imported`);
  return { import_supplier: supplierCode, external_account_number: externalAccountNumber, skipped: true as const };
}

export const VENDOR_KINDS = ['http', 'stripe'] as const;

export async function createVendor(db: Db, code: string, options: { kind: string; url: string; secret?: string | undefined; timeoutMs?: number | undefined }) {
  requireCode(code);
  if (!(VENDOR_KINDS as readonly string[]).includes(options.kind)) {
    throw new AdminError(`--kind must be one of ${VENDOR_KINDS.join(', ')}`);
  }
  let url: URL;
  try { url = new URL(options.url); } catch { throw new AdminError(`--url "${options.url}" is not a URL`); }
  if (!['http:', 'https:'].includes(url.protocol)) throw new AdminError('--url must be http:// or https://');
  const timeout = options.timeoutMs ?? 5000;
  if (!Number.isInteger(timeout) || timeout < 1 || timeout > 120_000) throw new AdminError('--timeout-ms must be a whole number from 1 to 120000');
  const row = await repo.insertVendor(db, { code, kind: options.kind, url: options.url.replace(/\/+$/, ''), secret: options.secret ?? null, timeout_ms: timeout })
    .catch((error) => {
      if (isUniqueViolation(error)) throw new AdminError(`vendor "${code}" already exists`);
      throw error;
    });
  return { vendor: row.code, kind: row.kind, url: row.url };
}

function requireText(value: string, what: string): void {
  if (!value || value.trim() !== value || value.length > 200) throw new AdminError(`${what} must be 1 to 200 characters with no surrounding spaces`);
}

// Codes appear in URL paths: the same rule as external account numbers (D5).
const PATH_SAFE = new RegExp(PATH_SAFE_PATTERN, 'u');
function requireCode(code: string): void {
  if (code === '' || code.length > 64 || !PATH_SAFE.test(code)) {
    throw new AdminError(`code "${code}" must be 1 to 64 characters, not "." or "..", without "/", control or format characters or surrounding spaces`);
  }
}

function requireStatus(status: string): SupplierStatus {
  if (!(SUPPLIER_STATUSES as readonly string[]).includes(status)) throw new AdminError(`--status must be one of ${SUPPLIER_STATUSES.join(', ')}`);
  return status as SupplierStatus;
}

function requireRoot(root: string): string {
  if (root.length > 500 || root.includes('..') || root.includes('\\')) throw new AdminError('--documents-root must be a relative path of at most 500 characters, without ".." or "\\"');
  return root.replace(/^\/+|\/+$/g, '');
}
