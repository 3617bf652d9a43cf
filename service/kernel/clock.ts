/** The time, injected: tests pass a clock they move by hand, never sleep. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };
