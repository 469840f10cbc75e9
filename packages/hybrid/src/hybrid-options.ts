import { type Clock, SluiceRangeError } from '@sluice/core';
import { describeValue, optionalClock, positiveFinite, positiveInteger, timerDuration } from '@sluice/core/store-kit';
import { type RedisConnection, toConnection } from '@sluice/redis/store-kit';
import { randomUUID } from 'node:crypto';

const NODE_ID = /^[A-Za-z0-9_.:-]{1,100}$/;

/** The connection to the user's client: any client @sluice/redis supports, recognised by shape. */
export function redisClient(value: unknown): RedisConnection {
  return toConnection(value);
}

export function nodeIdOption(value: unknown): string {
  if (value === undefined) return randomUUID();
  if (typeof value !== 'string' || !NODE_ID.test(value)) {
    throw new SluiceRangeError('nodeId', value, `nodeId must be 1-100 of [A-Za-z0-9_.:-], got ${describeValue(value)}`);
  }
  return value;
}

export const clockOption = (value: unknown): Clock | undefined => optionalClock('clock', value);

export const optionalPositive = (name: string, value: unknown, fallback: number): number =>
  value === undefined ? fallback : positiveFinite(name, value);

export const optionalPositiveInteger = (name: string, value: unknown, fallback: number): number =>
  value === undefined ? fallback : positiveInteger(name, value);

/** A duration that goes to a host timer (a deadline, a heartbeat interval). */
export const optionalTimerDuration = (name: string, value: unknown, fallback: number): number =>
  value === undefined ? fallback : timerDuration(name, value);
