import { sql, type RawBuilder } from 'kysely';

// A job's stored states in one table (pg-boss keeps its job states the same way): every check in
// code and every state list in SQL is built from it, so a new state is placed once and every
// query follows. `paused` is not stored: it is how an active job shows while it or its supplier is paused.

/** Where a stored state stands: not started, started and waiting for its first record, running, ended. */
type JobPhase = 'unstarted' | 'waiting' | 'running' | 'finished';

const PHASE_OF = {
  open: 'unstarted',
  scheduled: 'waiting',
  queued: 'waiting',
  running: 'running',
  completed: 'finished',
  cancelled: 'finished',
} as const satisfies Record<string, JobPhase>;

export type StoredJobState = keyof typeof PHASE_OF;
const STORED_JOB_STATES = Object.keys(PHASE_OF) as StoredJobState[];

const statesIn = (...phases: JobPhase[]): readonly StoredJobState[] =>
  Object.freeze(STORED_JOB_STATES.filter((state) => phases.includes(PHASE_OF[state])));

/** Started and not ended: its records are dispatched and claimed (shown as `paused` while paused). */
const ACTIVE_JOB_STATES = statesIn('waiting', 'running');
/** Started, and no worker has claimed a record yet. */
const WAITING_JOB_STATES = statesIn('waiting');
/** Ended: completed or cancelled. */
const FINISHED_JOB_STATES = statesIn('finished');

export const isActive = (state: StoredJobState): boolean => ACTIVE_JOB_STATES.includes(state);
export const isFinished = (state: StoredJobState): boolean => FINISHED_JOB_STATES.includes(state);

/**
 * A list of states as SQL literals (`'a', 'b'`), for `state IN (…)`: literals rather than
 * parameters, so the planner sees the same constant list as before and a prepared statement's
 * kept plan does not depend on them.
 */
const sqlList = (states: readonly StoredJobState[]): RawBuilder<unknown> => sql.join(states.map((state) => sql.lit(state)));

export const SQL_ACTIVE_JOB_STATES = sqlList(ACTIVE_JOB_STATES);
export const SQL_WAITING_JOB_STATES = sqlList(WAITING_JOB_STATES);
export const SQL_FINISHED_JOB_STATES = sqlList(FINISHED_JOB_STATES);
