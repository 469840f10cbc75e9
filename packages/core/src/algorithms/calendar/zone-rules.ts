import { type CivilDate, DAY_MS, civilFromDays, daysFromCivil, weekdayOf } from './civil.js';

/**
 * A time zone's offsets as numbers a Redis script can evaluate without a time zone database: a table of the
 * changes since 2000 up to where the zone's rule takes over, then that rule (two changes a year at local
 * calendar positions, as tzdata writes them: "the last Sunday of March at 02:00"). Built from this runtime's
 * Intl data (zone-from-intl.ts), so every node computing with the same tzdata gets the same numbers;
 * calendar_window.lua evaluates the same form with the same arithmetic.
 */
export interface ZoneRules {
  /** The IANA name the rules were read for. */
  readonly timeZone: string;
  /** The offset (ms to add to UTC) before the table's first change, and from 2000 back. */
  readonly baseOffsetMs: number;
  /** Instants (ms) the offset changed at, ascending, all before `ruleFromMs`. */
  readonly changes: readonly number[];
  /** The offset in force from each change on. */
  readonly offsets: readonly number[];
  /** From this instant on, `recurring` decides the offset (Infinity: the table's last offset holds forever). */
  readonly ruleFromMs: number;
  readonly recurring: readonly [RecurringChange, RecurringChange] | undefined;
}

/** One of a zone's two yearly changes: in `month`, the first `weekday` on or after `day`, at local `wallMs`. */
export interface RecurringChange {
  /** 1-12. */
  readonly month: number;
  /** 0 Sunday ... 6 Saturday. */
  readonly weekday: number;
  /** The first day of the month the change can fall on (tzdata's `Sun>=8`; `lastSun` of March is `Sun>=25`). */
  readonly day: number;
  /** Local time of day of the change, on the clock in force before it (ms since midnight). */
  readonly wallMs: number;
  /** The offset in force after it. */
  readonly offsetMs: number;
}

/**
 * The rules as the wire carries them, after the calendar parameters: base offset, the number of table
 * changes, each change's instant and offset, then 0 (no rule) or 2, the rule's first instant and each
 * change's month, weekday, day, wallMs and offset.
 */
export function zoneWire(zone: ZoneRules): number[] {
  const wire = [zone.baseOffsetMs, zone.changes.length];
  for (const [i, at] of zone.changes.entries()) wire.push(at, zone.offsets[i] as number);
  if (zone.recurring === undefined) wire.push(0);
  else {
    wire.push(2, zone.ruleFromMs);
    for (const c of zone.recurring) wire.push(c.month, c.weekday, c.day, c.wallMs, c.offsetMs);
  }
  return wire;
}

const scratch: CivilDate = { year: 0, month: 0, day: 0 };

/** The instant `change` happens in `year`, `before` being the offset in force until then. */
export function recurringChangeAt(change: RecurringChange, before: number, year: number): number {
  const first = daysFromCivil(year, change.month, change.day);
  const days = first + ((change.weekday - weekdayOf(first) + 7) % 7);
  return days * DAY_MS + change.wallMs - before;
}

/** The UTC year of instant `t`. */
function yearOf(t: number): number {
  return civilFromDays(Math.floor(t / DAY_MS), scratch).year;
}

/** The offset `recurring` puts in force at `t`: that of the latest change at or before it. */
function recurringOffset(recurring: readonly [RecurringChange, RecurringChange], t: number): number {
  const [a, b] = recurring;
  const year = yearOf(t);
  let latest = -Infinity;
  let offset = b.offsetMs;
  for (let y = year - 2; y <= year; y++) {
    const atA = recurringChangeAt(a, b.offsetMs, y);
    if (atA <= t && atA > latest) {
      latest = atA;
      offset = a.offsetMs;
    }
    const atB = recurringChangeAt(b, a.offsetMs, y);
    if (atB <= t && atB > latest) {
      latest = atB;
      offset = b.offsetMs;
    }
  }
  return offset;
}

/** The offset (ms to add to UTC for local wall time) in force at instant `t`. */
export function offsetAt(zone: ZoneRules, t: number): number {
  if (zone.recurring !== undefined && t >= zone.ruleFromMs) return recurringOffset(zone.recurring, t);
  const upTo = changesUpTo(zone.changes, t);
  return upTo === 0 ? zone.baseOffsetMs : (zone.offsets[upTo - 1] as number);
}

/** How many of the table's changes are at or before `t` (binary search: a table holds up to a few hundred). */
function changesUpTo(changes: readonly number[], t: number): number {
  let lo = 0;
  let hi = changes.length;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if ((changes[mid] as number) <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The first change of offset after instant `x` (Infinity: none). */
export function nextChangeAfter(zone: ZoneRules, x: number): number {
  const changes = zone.changes;
  const upTo = changesUpTo(changes, x);
  let next = upTo < changes.length ? (changes[upTo] as number) : Infinity;
  const recurring = zone.recurring;
  if (recurring !== undefined) {
    const [a, b] = recurring;
    const year = yearOf(x);
    for (let y = year; y <= year + 1; y++) {
      for (const at of [recurringChangeAt(a, b.offsetMs, y), recurringChangeAt(b, a.offsetMs, y)]) {
        if (at > x && at >= zone.ruleFromMs && at < next) next = at;
      }
    }
  }
  return next;
}
