// Time as the service reads it; tests hand in their own clock to move time instead of waiting.
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };
