/**
 * Proleptic Gregorian calendar arithmetic on day numbers (days since 1970-01-01), after Howard Hinnant's
 * `days_from_civil` / `civil_from_days`. Plain floor divisions on doubles: calendar_window.lua does the same
 * operations in the same order, so a boundary computed here and in Redis is the same number.
 */

export const DAY_MS = 86_400_000;

/** The day number of `year`-`month`-`day` (month 1-12). */
export function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146_097 + doe - 719_468;
}

/** A civil date as three numbers, written into one object per caller (decisions allocate nothing for it). */
export interface CivilDate {
  year: number;
  month: number;
  day: number;
}

/** The civil date of day number `days`, written into `into`. */
export function civilFromDays(days: number, into: CivilDate): CivilDate {
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const month = mp < 10 ? mp + 3 : mp - 9;
  into.year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  into.month = month;
  into.day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  return into;
}

/** Days in `month` (1-12) of `year`. */
export function daysInMonth(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** The weekday of day number `days`: 0 Sunday ... 6 Saturday (1970-01-01 was a Thursday). */
export function weekdayOf(days: number): number {
  return (((days + 4) % 7) + 7) % 7;
}
