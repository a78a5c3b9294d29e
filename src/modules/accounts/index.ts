// The accounts module's surface: drift against the account imported before; the account read's routes.
export { findAccountDrift } from './account-drift.ts';
export { accountsRoutes } from './accounts.routes.ts';
