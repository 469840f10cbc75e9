import { SluiceRangeError, SluiceTypeError } from '../../foundation/errors.js';
import { describe } from '../../foundation/validate.js';
import { type CalendarAnchor, type CalendarPeriod, PERIOD_CODES } from './calendar-bounds.js';
import { DAY_MS, type CivilDate, civilFromDays, daysFromCivil, daysInMonth, weekdayOf } from './civil.js';
import { type ZoneRules, offsetAt } from './zone-rules.js';

/** A period option, validated. */
export function calendarPeriod(value: unknown): CalendarPeriod {
  if (typeof value === 'string' && Object.hasOwn(PERIOD_CODES, value)) return value as CalendarPeriod;
  const message = `period must be 'day', 'week', 'month' or 'year', got ${describe(value)}`;
  if (typeof value !== 'string') throw new SluiceTypeError('period', value, message);
  throw new SluiceRangeError('period', value, message);
}

/** Each period's anchor when none is given: local midnight, of a Monday (ISO weeks), of the 1st, of 1 January. */
const DEFAULT_ANCHOR: CalendarAnchor = { month: 1, day: 1, weekday: 1, timeMs: 0 };

/** An anchor and the local date-time it was read as ('YYYY-MM-DDTHH:mm:ss.sss'), which a stored rule keeps. */
export interface ParsedAnchor {
  readonly anchor: CalendarAnchor;
  readonly local: string | undefined;
}

const LOCAL = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?)?$/;
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?(?:Z|[+-]\d{2}:\d{2})$/;

/**
 * The `anchor` option: a Date (an instant, read in the zone), an ISO 8601 date-time with `Z` or an offset (the
 * same), or a local date or date-time without one (`'2026-01-31'`, `'2026-01-31T09:00'`), read as wall time
 * in the zone. Anything else, or a date that does not exist (`'2026-02-30'`), is a typed error naming it.
 */
export function calendarAnchor(value: unknown, zone: ZoneRules): ParsedAnchor {
  if (value === undefined) return { anchor: DEFAULT_ANCHOR, local: undefined };
  const notADate = (why: string) =>
    new SluiceRangeError('anchor', value, `anchor must be a date (${why}), got ${describeAnchor(value)}`);
  let fields: { year: number; month: number; day: number; timeMs: number };
  if (value instanceof Date || (typeof value === 'string' && INSTANT.test(value))) {
    const t = value instanceof Date ? value.getTime() : Date.parse(value);
    if (!Number.isFinite(t)) throw notADate('a valid Date or ISO 8601 date-time');
    const local = t + offsetAt(zone, t);
    const days = Math.floor(local / DAY_MS);
    const civil = civilFromDays(days, { year: 0, month: 0, day: 0 } satisfies CivilDate);
    fields = { ...civil, timeMs: local - days * DAY_MS };
  } else if (typeof value === 'string') {
    const m = LOCAL.exec(value);
    if (m === null) throw notADate("a Date, or 'YYYY-MM-DD' with an optional 'THH:mm[:ss[.sss]]' and offset");
    const [year, month, day, hour, minute, second] = [1, 2, 3, 4, 5, 6].map((i) => Number(m[i] ?? 0)) as [
      number,
      number,
      number,
      number,
      number,
      number,
    ];
    const ms = Number((m[7] ?? '0').padEnd(3, '0'));
    if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) throw notADate('no such day');
    if (hour > 23 || minute > 59 || second > 59) throw notADate('no such time of day');
    fields = { year, month, day, timeMs: ((hour * 60 + minute) * 60 + second) * 1000 + ms };
  } else {
    throw new SluiceTypeError('anchor', value, `anchor must be a Date or an ISO 8601 string, got ${describe(value)}`);
  }
  const weekday = weekdayOf(daysFromCivil(fields.year, fields.month, fields.day));
  return {
    anchor: { month: fields.month, day: fields.day, weekday, timeMs: fields.timeMs },
    local: localText(fields),
  };
}

function describeAnchor(value: unknown): string {
  return value instanceof Date ? 'an invalid Date' : describe(value);
}

const pad = (n: number, width: number) => String(n).padStart(width, '0');

/** 'YYYY-MM-DDTHH:mm:ss.sss' of local calendar fields. */
function localText({ year, month, day, timeMs }: { year: number; month: number; day: number; timeMs: number }) {
  const s = Math.floor(timeMs / 1000);
  return (
    `${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}T${pad(Math.floor(s / 3600), 2)}:${pad(Math.floor(s / 60) % 60, 2)}:` +
    `${pad(s % 60, 2)}.${pad(timeMs % 1000, 3)}`
  );
}
