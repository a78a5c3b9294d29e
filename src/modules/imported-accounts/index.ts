// The imported-accounts module's surface: an imported account found (or locked) by supplier and
// external number. Below the history imports (notes, statements, transactions, payment instructions)
// and the account read, which all start from it; it imports no other module.
export { accountNotFound, findImportedAccount, type ImportDeps, lockImportedAccount } from './imported-account.ts';
