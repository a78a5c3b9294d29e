import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import { systemClock } from '../core/clock.ts';
import { CliError } from './cli-error.ts';
import * as admin from '../modules/admin/index.ts';
import type * as Webhooks from '../modules/webhooks/index.ts';
import { table } from './table.ts';

// import-admin's commands, one entry each: what they take, what they do (a call into the admin
// services) and how they read to a person. `--json` prints the object `run` returns.
export type Flags = Record<string, string | boolean | undefined>;

export interface OptionSpec { type: 'string' | 'boolean'; value?: string; required?: boolean }

export interface Command {
  name: string;
  args: string[];
  options: Record<string, OptionSpec>;
  summary: string;
  /** Checks that need no store, so that a typo fails before the store is opened (a promise it returns is awaited). */
  check?(flags: Flags): unknown;
  run(db: Kysely<Database>, args: string[], flags: Flags): Promise<object>;
  text(result: Record<string, unknown>): string;
}

const usageError = (message: string) => new CliError('invalid_argument', message);

/**
 * The webhooks module, loaded by the webhook commands alone: it brings the events module's routes
 * (Fastify, TypeBox), about half a second of start-up that every other command would pay.
 */
const webhooks = (): Promise<typeof Webhooks> => import('../modules/webhooks/index.ts');
/** How many delivery attempts `webhook deliveries` shows, newest first. */
const DELIVERIES_SHOWN = 100;

const STATUS = { type: 'string', value: admin.SUPPLIER_STATUSES.join('|') } as const;
const SUPPLIER_FLAGS: Record<string, OptionSpec> = {
  status: STATUS,
  'customer-emails': { type: 'boolean' },
  'no-customer-emails': { type: 'boolean' },
  'documents-root': { type: 'string', value: 'ROOT' },
};

function supplierOptions(flags: Flags): admin.SupplierOptions {
  if (flags['customer-emails'] && flags['no-customer-emails']) {
    throw usageError('give --customer-emails or --no-customer-emails, not both');
  }
  const status = flags.status as string | undefined;
  if (status !== undefined && !(admin.SUPPLIER_STATUSES as readonly string[]).includes(status)) {
    throw usageError(`--status must be one of ${admin.SUPPLIER_STATUSES.join(', ')}, got "${status}"`);
  }
  return {
    status: status as admin.SupplierOptions['status'],
    customerEmails: flags['customer-emails'] ? true : flags['no-customer-emails'] ? false : undefined,
    documentsRoot: flags['documents-root'] as string | undefined,
  };
}

function timeoutOf(flags: Flags): number | undefined {
  const raw = flags['timeout-ms'] as string | undefined;
  if (raw === undefined) return undefined;
  if (!/^\d{1,9}$/.test(raw)) throw usageError(`--timeout-ms must be a whole number of milliseconds, got "${raw}"`);
  return Number(raw);
}

const supplierText = (r: Record<string, unknown>) =>
  `Supplier ${String(r.code)} of organisation "${String(r.organisation)}": status ${String(r.status)}, `
  + `customer emails ${r.customer_emails ? 'on' : 'off'}, documents root "${String(r.documents_root)}".`;

const VENDOR_FLAGS: Record<string, OptionSpec> = {
  kind: { type: 'string', value: admin.VENDOR_KINDS.join('|') },
  url: { type: 'string', value: 'BASE_URL' },
  secret: { type: 'string', value: 'S' },
  'timeout-ms': { type: 'string', value: 'N' },
};

function vendorOptions(flags: Flags): admin.VendorOptions {
  if (flags.secret !== undefined && flags['no-secret']) throw usageError('give --secret or --no-secret, not both');
  const options = {
    kind: flags.kind as string | undefined,
    url: flags.url as string | undefined,
    secret: flags['no-secret'] ? null : flags.secret as string | undefined,
    timeoutMs: timeoutOf(flags),
  };
  admin.checkVendorOptions({ ...options, secret: undefined });
  // The service refuses an empty secret too; the way out of it is a flag, so the CLI says it.
  if (options.secret === '') throw usageError('--secret must not be empty (--no-secret removes it)');
  return options;
}

const vendorText = (r: Record<string, unknown>) =>
  `Payment vendor ${String(r.vendor)} (${String(r.kind)}, ${String(r.url)}): `
  + `${r.secret_set ? 'secret set' : 'no secret'}, timeout ${String(r.timeout_ms)} ms, registered ${String(r.created_at)}.`;

export const COMMANDS: Command[] = [
  {
    name: 'org create', args: ['NAME'], options: {},
    summary: 'create an organisation and its first API key (the key is shown once)',
    run: (db, [name]) => admin.createOrganisation(db, name!),
    text: (r) => `Created organisation "${String(r.organisation)}".\nAPI key (shown once, keep it secret): ${String(r.api_key)}`,
  },
  {
    name: 'key create', args: ['ORG'], options: {},
    summary: 'create another API key for an organisation (shown once)',
    run: (db, [org]) => admin.createApiKey(db, org!),
    text: (r) => `New API key for "${String(r.organisation)}" (shown once, keep it secret): ${String(r.api_key)}`,
  },
  {
    name: 'key list', args: ['ORG'], options: {},
    summary: 'list an organisation\'s API keys: prefix, created, revoked (never a secret)',
    run: (db, [org]) => admin.listApiKeys(db, org!),
    text: (r) => {
      const keys = r.api_keys as admin.ApiKeyView[];
      if (keys.length === 0) return `Organisation "${String(r.organisation)}" has no API key.`;
      return table(['PREFIX', 'CREATED', 'REVOKED'], keys.map((k) => [k.prefix, k.created_at, k.revoked_at ?? '-']));
    },
  },
  {
    name: 'key revoke', args: ['KEY_PREFIX'], options: {},
    summary: 'revoke an API key by its prefix (ak_…); tokens issued from it stop working',
    run: (db, [prefix]) => admin.revokeApiKey(db, prefix!),
    text: (r) => `Revoked API key ${String(r.revoked)}; tokens issued from it no longer work.`,
  },
  {
    name: 'supplier create', args: ['CODE'],
    options: { org: { type: 'string', value: 'ORG', required: true }, ...SUPPLIER_FLAGS },
    summary: 'create an import supplier of an organisation (status defaults to ongoing)',
    check: supplierOptions,
    run: (db, [code], flags) => admin.createSupplier(db, code!, flags.org as string, supplierOptions(flags)),
    text: supplierText,
  },
  {
    name: 'supplier list', args: [], options: { org: { type: 'string', value: 'ORG' } },
    summary: 'list the import suppliers (of one organisation with --org)',
    run: (db, _args, flags) => admin.listSuppliers(db, flags.org as string | undefined),
    text: (r) => {
      const suppliers = r.suppliers as admin.SupplierView[];
      if (suppliers.length === 0) return 'No supplier.';
      return table(['CODE', 'ORGANISATION', 'STATUS', 'CUSTOMER_EMAILS', 'DOCUMENTS_ROOT'],
        suppliers.map((s) => [s.code, s.organisation, s.status, s.customer_emails ? 'on' : 'off', s.documents_root || '-']));
    },
  },
  {
    name: 'supplier show', args: ['CODE'], options: {},
    summary: 'show an import supplier',
    run: (db, [code]) => admin.showSupplier(db, code!),
    text: supplierText,
  },
  {
    name: 'supplier set', args: ['CODE'], options: SUPPLIER_FLAGS,
    summary: 'change an import supplier; prints it after the change',
    check: supplierOptions,
    run: (db, [code], flags) => admin.setSupplier(db, code!, supplierOptions(flags)),
    text: supplierText,
  },
  {
    name: 'team create', args: ['NAME'], options: {},
    summary: 'create an operations team',
    run: (db, [name]) => admin.createTeam(db, name!),
    text: (r) => `Created operations team "${String(r.operations_team)}".`,
  },
  {
    name: 'team list', args: [], options: {},
    summary: 'list the operations teams',
    run: (db) => admin.listTeams(db),
    text: (r) => {
      const teams = r.operations_teams as Array<{ name: string; created_at: string }>;
      if (teams.length === 0) return 'No operations team.';
      return table(['NAME', 'CREATED'], teams.map((t) => [t.name, t.created_at]));
    },
  },
  {
    name: 'account skip', args: ['SUPPLIER', 'EXTERNAL_ACCOUNT_NUMBER'], options: {},
    summary: 'mark staged account data to be skipped (it will not be created)',
    run: (db, [supplier, external]) => admin.skipAccount(db, supplier!, external!),
    text: (r) => `Account ${String(r.external_account_number)} of supplier ${String(r.import_supplier)} is marked to be skipped.`,
  },
  {
    name: 'vendor create', args: ['CODE'],
    options: {
      ...VENDOR_FLAGS,
      kind: { ...VENDOR_FLAGS.kind!, required: true },
      url: { ...VENDOR_FLAGS.url!, required: true },
    },
    summary: 'register a payment vendor that payment instructions are checked with',
    check: vendorOptions,
    run: (db, [code], flags) => admin.createVendor(db, code!, { ...vendorOptions(flags), kind: flags.kind as string, url: flags.url as string }),
    text: (r) => `Registered payment vendor ${String(r.vendor)} (${String(r.kind)}, ${String(r.url)}).`,
  },
  {
    name: 'vendor list', args: [], options: {},
    summary: 'list the payment vendors (whether a secret is set, never the secret)',
    run: (db) => admin.listVendors(db),
    text: (r) => {
      const vendors = r.vendors as admin.VendorView[];
      if (vendors.length === 0) return 'No payment vendor.';
      return table(['CODE', 'KIND', 'URL', 'SECRET', 'TIMEOUT_MS'],
        vendors.map((v) => [v.vendor, v.kind, v.url, v.secret_set ? 'set' : 'none', String(v.timeout_ms)]));
    },
  },
  {
    name: 'vendor show', args: ['CODE'], options: {},
    summary: 'show a payment vendor (whether a secret is set, never the secret)',
    run: (db, [code]) => admin.showVendor(db, code!),
    text: vendorText,
  },
  {
    name: 'vendor set', args: ['CODE'], options: { ...VENDOR_FLAGS, 'no-secret': { type: 'boolean' } },
    summary: 'change a payment vendor (only what is given; the next payment instruction uses it); prints it after the change',
    check: vendorOptions,
    run: (db, [code], flags) => admin.setVendor(db, code!, vendorOptions(flags)),
    text: vendorText,
  },
  {
    name: 'vendor delete', args: ['CODE'], options: {},
    summary: 'delete a payment vendor that no payment instruction names',
    run: (db, [code]) => admin.deleteVendor(db, code!),
    text: (r) => `Deleted payment vendor ${String(r.deleted)}.`,
  },
  // A bad --url or --events is a command-line mistake (status 2), found before the store opens.
  {
    name: 'webhook create', args: ['ORG'],
    options: { url: { type: 'string', value: 'URL', required: true }, events: { type: 'string', value: 'TYPE,…' } },
    summary: 'add a webhook endpoint for an organisation\'s events (all types unless --events); the signing secret is shown once',
    check: async (flags) => {
      const module = await webhooks();
      if (typeof flags.url === 'string') module.checkWebhookUrl(flags.url);
      module.parseEventTypes(flags.events as string | undefined);
    },
    run: async (db, [org], flags) => (await webhooks()).createWebhook(db, org!, flags.url as string, flags.events as string | undefined),
    text: (r) => `Created webhook ${String(r.webhook)} → ${String(r.url)} for ${r.events ? (r.events as string[]).join(', ') : 'all event types'}.\n`
      + `Signing secret (shown once, keep it secret): ${String(r.secret)}`,
  },
  {
    name: 'webhook list', args: ['ORG'], options: {},
    summary: 'list an organisation\'s webhook endpoints',
    run: async (db, [org]) => (await webhooks()).listWebhooks(db, org!),
    text: (r) => {
      const list = r.webhooks as Webhooks.WebhookView[];
      if (list.length === 0) return `Organisation "${String(r.organisation)}" has no webhook.`;
      return list.map((w) => `${w.webhook} ${w.url} ${w.events ? w.events.join(',') : 'all'} `
        + (w.enabled ? 'enabled' : `disabled (${w.disabled_reason ?? 'no reason'})`)).join('\n');
    },
  },
  {
    name: 'webhook enable', args: ['ID'], options: {},
    summary: 'enable a disabled webhook endpoint (after a 410, or disable): it gets the events recorded from now on',
    run: async (db, [id]) => (await webhooks()).enableWebhook(db, id!),
    text: (r) => `Webhook ${String(r.webhook)} is enabled. Events recorded while it was disabled are not sent (the events feed has them).`,
  },
  {
    name: 'webhook disable', args: ['ID'], options: { reason: { type: 'string', value: 'TEXT' } },
    summary: 'stop deliveries to a webhook endpoint, keeping it (enable it again later); pending retries are dropped',
    check: async (flags) => (await webhooks()).checkDisableReason(flags.reason as string | undefined),
    run: async (db, [id], flags) => (await webhooks()).disableWebhook(db, id!, flags.reason as string | undefined, systemClock.now()),
    text: (r) => `Webhook ${String(r.webhook)} is disabled (${String(r.disabled_reason)}); no event is sent to it until it is enabled again.`,
  },
  {
    name: 'webhook delete', args: ['ID'], options: {},
    summary: 'delete a webhook endpoint (its pending deliveries are dropped)',
    run: async (db, [id]) => (await webhooks()).deleteWebhook(db, id!),
    text: (r) => `Deleted webhook ${String(r.deleted)}.`,
  },
  {
    name: 'webhook deliveries', args: ['ID'], options: {},
    summary: `show a webhook's latest delivery attempts (up to ${DELIVERIES_SHOWN}, newest first)`,
    run: async (db, [id]) => (await webhooks()).webhookDeliveries(db, id!, DELIVERIES_SHOWN),
    text: (r) => {
      const list = r.deliveries as Webhooks.DeliveryView[];
      if (list.length === 0) return `Webhook ${String(r.webhook)} has no delivery yet.`;
      return list.map((d) => `${d.at} event ${d.event} attempt ${d.attempt}: `
        + `${d.status_code ?? 'no answer'} in ${d.latency_ms ?? '-'} ms${d.error ? ` (${d.error})` : ''}`).join('\n');
    },
  },
];

export function synopsis(command: Command): string {
  // `--x` and `--no-x` are one choice: shown once, as `--x …|--no-x`.
  const names = Object.keys(command.options);
  const options = Object.entries(command.options)
    .filter(([name]) => !(name.startsWith('no-') && names.includes(name.slice(3))))
    .map(([name, spec]) => {
      const plain = spec.type === 'string' ? `--${name} ${spec.value ?? 'VALUE'}` : `--${name}`;
      const text = names.includes(`no-${name}`) ? `${plain}|--no-${name}` : plain;
      return spec.required ? text : `[${text}]`;
    });
  return [command.name, ...command.args, ...options, '[--json]'].join(' ');
}
