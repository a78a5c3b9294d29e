// The time as the service's own decisions see it (a token's expiry, a throttle window, when a webhook
// retry comes due, how long a cached lookup is trusted, a rotated secret's end). Built once by the
// composition root (composition.ts: for main.ts, worker.ts and the tests' app) and passed to the modules that decide by it,
// so a test sets the time instead of sleeping past it. Times the store writes by itself (a row's
// `created_at`) stay the store's: they record, they do not decide.

export interface Clock {
  now(): Date;
  /** The same instant as now(), in milliseconds since the epoch. */
  nowMs(): number;
}

export const systemClock: Clock = {
  now: () => new Date(),
  nowMs: () => Date.now(),
};

/**
 * A clock a test moves. It starts on the system time and runs with it; `advance` moves it ahead (it
 * goes on running from there), `set` stops it at an instant until it is moved again, `reset` puts it
 * back on the system time. It runs by default because the queue's jobs come due by the store's clock,
 * which a test cannot set: a retry scheduled a moment ahead must still come.
 */
export interface TestClock extends Clock {
  advance(ms: number): void;
  set(at: Date): void;
  reset(): void;
}

export function createTestClock(): TestClock {
  let offsetMs = 0;
  let stoppedAt: number | null = null;
  const nowMs = () => stoppedAt ?? Date.now() + offsetMs;
  return {
    nowMs,
    now: () => new Date(nowMs()),
    advance(ms) {
      if (stoppedAt !== null) stoppedAt += ms;
      else offsetMs += ms;
    },
    set(at) {
      stoppedAt = at.getTime();
    },
    reset() {
      offsetMs = 0;
      stoppedAt = null;
    },
  };
}
