import { DAY_MS, type CivilDate, civilFromDays, daysFromCivil, daysInMonth } from './civil.js';
import { type ZoneRules, nextChangeAfter, offsetAt } from './zone-rules.js';

/** The calendar periods a calendarWindow counts in. */
export type CalendarPeriod = 'day' | 'week' | 'month' | 'year';

/** Each period's number on the wire (calendar_window.lua reads it). */
export const PERIOD_CODES: Readonly<Record<CalendarPeriod, number>> = { day: 1, week: 2, month: 3, year: 4 };

/**
 * Where in its period a window starts, as local calendar fields: the time of day (every period), the weekday
 * (a week), the day of the month (a month, a year: past the month's end it is the month's last day) and the
 * month (a year).
 */
export interface CalendarAnchor {
  /** 1-12. */
  readonly month: number;
  /** 1-31. */
  readonly day: number;
  /** 0 Sunday ... 6 Saturday. */
  readonly weekday: number;
  /** ms since local midnight. */
  readonly timeMs: number;
}

/** A period, its anchor and its zone: everything a window's bounds depend on. */
export interface CalendarShape {
  readonly period: number;
  readonly anchor: CalendarAnchor;
  readonly zone: ZoneRules;
}

/** Offsets reach from -12 h to +14 h: every instant showing a local time lies within 15 h of it. */
const REACH_MS = 15 * 3_600_000;

/**
 * The earliest instant whose local time is `local` or later: a local time a change skipped (a spring
 * forward) starts at the change; one shown twice (a fall back) at its first showing.
 */
export function instantOf(zone: ZoneRules, local: number): number {
  const early = offsetAt(zone, local - REACH_MS);
  const late = offsetAt(zone, local + REACH_MS);
  if (early === late) return local - early;
  const first = local - early;
  const second = local - late;
  const firstShows = offsetAt(zone, first) === early;
  const secondShows = offsetAt(zone, second) === late;
  if (firstShows && secondShows) return Math.min(first, second);
  if (firstShows) return first;
  if (secondShows) return second;
  // In a skipped hour: the first instant after it is the change itself.
  return Math.min(nextChangeAfter(zone, second), first);
}

const civil: CivilDate = { year: 0, month: 0, day: 0 };

/** The local start (wall ms) of window number `n` of a shape (see windowNumber). */
export function localStart(shape: CalendarShape, n: number): number {
  const { anchor } = shape;
  switch (shape.period) {
    case 1:
      return n * DAY_MS + anchor.timeMs;
    case 2:
      return (n * 7 + firstWeekday(anchor.weekday)) * DAY_MS + anchor.timeMs;
    case 3: {
      const year = Math.floor(n / 12);
      const month = n - year * 12 + 1;
      return daysFromCivil(year, month, Math.min(anchor.day, daysInMonth(year, month))) * DAY_MS + anchor.timeMs;
    }
    default:
      return (
        daysFromCivil(n, anchor.month, Math.min(anchor.day, daysInMonth(n, anchor.month))) * DAY_MS + anchor.timeMs
      );
  }
}

/** The day number of the first `weekday` on or after 1970-01-01 (a Thursday). */
function firstWeekday(weekday: number): number {
  return (((weekday - 4) % 7) + 7) % 7;
}

/**
 * The number of the window local wall time `local` falls in: days, weeks since the first anchor weekday of
 * 1970, months as year x 12 + month - 1, or years.
 */
export function windowNumber(shape: CalendarShape, local: number): number {
  const { anchor } = shape;
  switch (shape.period) {
    case 1:
      return Math.floor((local - anchor.timeMs) / DAY_MS);
    case 2:
      return Math.floor((Math.floor((local - anchor.timeMs) / DAY_MS) - firstWeekday(anchor.weekday)) / 7);
    case 3: {
      civilFromDays(Math.floor(local / DAY_MS), civil);
      const n = civil.year * 12 + civil.month - 1;
      return local < localStart(shape, n) ? n - 1 : n;
    }
    default: {
      const n = civilFromDays(Math.floor(local / DAY_MS), civil).year;
      return local < localStart(shape, n) ? n - 1 : n;
    }
  }
}

/** A window as two instants, written into one object per rule (a decision allocates nothing for it). */
export interface Bounds {
  start: number;
  end: number;
}

/**
 * The window instant `t` falls in, into `into`: from the earliest instant showing its local start to the
 * earliest showing the next one. Checked against the instants themselves, so a local time shown twice (a
 * fall back across a boundary) still puts `t` in exactly one window.
 */
export function boundsAt(shape: CalendarShape, t: number, into: Bounds): Bounds {
  const zone = shape.zone;
  let n = windowNumber(shape, t + offsetAt(zone, t));
  let start = instantOf(zone, localStart(shape, n));
  let end = instantOf(zone, localStart(shape, n + 1));
  while (t >= end) {
    n++;
    start = end;
    end = instantOf(zone, localStart(shape, n + 1));
  }
  while (t < start) {
    n--;
    end = start;
    start = instantOf(zone, localStart(shape, n));
  }
  into.start = start;
  into.end = end;
  return into;
}
