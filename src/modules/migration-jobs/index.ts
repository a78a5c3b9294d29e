// The migration jobs module's surface: its queues and workers (workers.ts), the routes, and what the
// stats and the dashboard read of a job (its view, its states, the record outcomes); for the tests, the
// dispatcher's queue name, the chart bucket rule and the NDJSON line splitter, each checked alone.
export { SQL_FINISHED_JOB_STATES } from './job-states.ts';
export { JOB } from './migration-jobs.examples.ts';
export { migrationJobsRoutes } from './migration-jobs.routes.ts';
export { Job, RECORD_OUTCOMES, type RecordOutcome } from './migration-jobs.schemas.ts';
export { unfinishedJobViews } from './migration-jobs.service.ts';
export { CHURNED_TABLES as MIGRATION_CHURNED_TABLES, defineMigrationQueues, DISPATCH_QUEUE, RECORD_QUEUE } from './job-queues.ts';
export { startMigrationWorkers } from './migration-jobs.worker.ts';
export { jobViewsRoutes } from './job-views.routes.ts';
export { bucketSecondsFor } from './job-views.service.ts';
export { ndjsonLines, type Line } from './ndjson-lines.ts';
export { reconciliationRoutes } from './reconciliation.routes.ts';
