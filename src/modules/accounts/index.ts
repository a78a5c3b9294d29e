// The accounts module's surface: an imported account found (or locked) by supplier and external
// number, for the history imports; drift against the account imported before; the routes.
export { findAccountDrift } from './account-drift.ts';
export { accountsRoutes } from './accounts.routes.ts';
export { findImportedAccount, lockImportedAccount } from './imported-account.ts';
