// The transactions module's surface: the import service (the route's and a migration record's), the
// body schema, an account's balance and open period (the account read), the routes; for the tests, the
// OpenAPI example.
export { TRANSACTION_RESULTS } from './transactions.examples.ts';
export { findBalance, findOpenPeriodStart } from './transactions.repository.ts';
export { transactionsRoutes } from './transactions.routes.ts';
export { CreateTransactionsBody } from './transactions.schemas.ts';
export { createTransactions, transactionRows, type Transactions } from './transactions.service.ts';
export { MAX_BALANCE, transactionsInsertMany } from './transactions.repository.ts';
