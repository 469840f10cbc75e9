import { inCall } from '../foundation/errors.js';
import { knownOptions, type OptionNames } from '../foundation/options.js';
import { positiveInteger } from '../foundation/validate.js';
import { type Adjusted, type Algorithm, type Outcome, type RuleOptions, shareOf } from './algorithm.js';
import {
  type Bounds,
  type CalendarAnchor,
  type CalendarPeriod,
  type CalendarShape,
  PERIOD_CODES,
  boundsAt,
} from './calendar/calendar-bounds.js';
import { calendarAnchor, calendarPeriod } from './calendar/calendar-options.js';
import { type FixedWindowState, countInWindow } from './fixed-window.js';
import { zoneRules } from './calendar/zone-from-intl.js';
import { zoneWire } from './calendar/zone-rules.js';
import { RULE_OPTIONS, commonRuleOptions, ownOptions } from './rule-common.js';
import { defaultRuleName } from './rule-name.js';

/** Options of `calendarWindow`: `limit` per local calendar `period` in `timeZone`, starting at `anchor`. */
export interface CalendarWindowOptions extends RuleOptions {
  /** Permits per period (an integer >= 1). */
  limit: number;
  /** The calendar period a window lasts: a local day, an ISO week, a month or a year. */
  period: CalendarPeriod;
  /**
   * An IANA time zone (`'Europe/Berlin'`), read from this runtime's Intl data; every node must run the same
   * tz data (Node's ICU) to draw the same boundaries.
   * @default 'UTC'
   */
  timeZone?: string;
  /**
   * Where windows start within the period: a Date (an instant) or an ISO 8601 string, read as local wall time
   * in `timeZone` unless it has `Z` or an offset. Its time of day sets every period's boundary time, its
   * weekday a week's, its day of the month a month's and a year's (the 31st is a shorter month's last day),
   * its month a year's (a billing date: `anchor: '2026-01-31T09:00'`). A boundary in an hour a clock change
   * skipped falls at the change.
   * @default local midnight of a Monday (ISO weeks), of the 1st, of 1 January
   */
  anchor?: Date | string;
}

const CALENDAR_WINDOW_OPTIONS: OptionNames<CalendarWindowOptions> = {
  ...RULE_OPTIONS,
  limit: true,
  period: true,
  timeZone: true,
  anchor: true,
};

/** A calendar window's state: the window it counts (its start) and its count, as a fixed window's. */
export type CalendarWindowState = FixedWindowState;

/** The longest each period lasts, in ms: what the rule reports as its window (headers' `w`). */
const LONGEST: Readonly<Record<CalendarPeriod, number>> = {
  day: 86_400_000,
  week: 7 * 86_400_000,
  month: 31 * 86_400_000,
  year: 366 * 86_400_000,
};

/** Only the anchor's fields the period uses: two anchors that draw the same windows are one shape. */
function usedFields(period: CalendarPeriod, a: CalendarAnchor): CalendarAnchor {
  return {
    month: period === 'year' ? a.month : 1,
    day: period === 'month' || period === 'year' ? a.day : 1,
    weekday: period === 'week' ? a.weekday : 1,
    timeMs: a.timeMs,
  };
}

/**
 * At most `limit` permits per local calendar period: a day from midnight (or the anchor's time) to the next,
 * an ISO week from Monday, a month from the 1st (or a billing day), a year; in an IANA time zone, across
 * daylight-saving changes (a 23- or 25-hour day is one day). A fixed window whose windows are the calendar's:
 * a burst straddling a boundary can pass 2 x limit. Decided in Redis with the same numbers (the zone's rules
 * travel with the rule; Redis needs no time zone data).
 *
 * @example
 * const monthly = calendarWindow({ limit: 10_000, period: 'month', timeZone: 'Europe/Berlin' })
 * const billing = calendarWindow({ limit: 500, period: 'month', anchor: '2026-01-31T09:00', timeZone: 'America/New_York' })
 */
export function calendarWindow(options: CalendarWindowOptions): Algorithm<CalendarWindowState> {
  return inCall('calendarWindow', () => {
    knownOptions('calendarWindow options', CALENDAR_WINDOW_OPTIONS, options, true);
    const limit = positiveInteger('limit', options.limit);
    const period = calendarPeriod(options.period);
    const timeZone = options.timeZone ?? 'UTC';
    const zone = zoneRules(timeZone);
    const parsed = calendarAnchor(options.anchor, zone);
    const anchor = usedFields(period, parsed.anchor);
    const shape: CalendarShape = { period: PERIOD_CODES[period], anchor, zone };
    const where = [...(timeZone === 'UTC' ? [] : [timeZone]), ...(parsed.local === undefined ? [] : [parsed.local])];
    const common = commonRuleOptions(options, defaultRuleName('cw', [limit, 'per', period, ...where]), `cw-${period}`);
    const windowMs = LONGEST[period];

    /** The window of the last instant asked about: a decision in the same window computes nothing. */
    const memo: Bounds = { start: 0, end: 0 };
    function windowOf(t: number): Bounds {
      if (!(t >= memo.start && t < memo.end)) boundsAt(shape, t, memo);
      return memo;
    }

    function consume(
      state: CalendarWindowState | undefined,
      nowMs: number,
      permits: number,
    ): Outcome<CalendarWindowState> {
      const w = windowOf(nowMs);
      let windowStart = w.start;
      let end = w.end;
      let count = 0;
      // A clock that stepped back stays in the stored window rather than opening an older one.
      if (state !== undefined && state.windowStart >= windowStart) {
        if (state.windowStart !== windowStart) end = windowOf(state.windowStart).end;
        windowStart = state.windowStart;
        count = state.count;
      }
      return countInWindow(state, limit, windowStart, count, end - nowMs, permits);
    }

    /** The window `nowMs` counts in given `state`, as consume reads it: its start, end and count. */
    function current(state: CalendarWindowState | undefined, nowMs: number) {
      const w = windowOf(nowMs);
      if (state === undefined || state.windowStart < w.start) return { start: w.start, end: w.end, count: 0 };
      const end = state.windowStart === w.start ? w.end : windowOf(state.windowStart).end;
      return { start: state.windowStart, end, count: state.count };
    }

    // Only from the window the grant was counted in, while it is the stored one (see fixedWindow).
    function refund(
      state: CalendarWindowState | undefined,
      nowMs: number,
      permits: number,
      grantedAtMs: number,
    ): Adjusted<CalendarWindowState> {
      if (state === undefined) return { state, ttlMs: 0 };
      const { start, end, count } = current(state, nowMs);
      const ttlMs = end - nowMs;
      const inWindow = Number.isNaN(grantedAtMs) || (grantedAtMs >= start && grantedAtMs < end);
      if (start !== state.windowStart || !inWindow) return { state, ttlMs };
      return { state: { windowStart: start, count: Math.max(0, count - permits) }, ttlMs };
    }

    function penalize(
      state: CalendarWindowState | undefined,
      nowMs: number,
      permits: number,
    ): Adjusted<CalendarWindowState> {
      const { start, end, count } = current(state, nowMs);
      return { state: { windowStart: start, count: count + permits }, ttlMs: end - nowMs };
    }

    const a = anchor;
    return {
      kind: 'calendarWindow',
      name: common.name,
      scope: common.scope,
      limit,
      windowMs,
      reserves: false,
      stableDenials: true,
      params: { limit, period, timeZone, ...(parsed.local === undefined ? {} : { anchor: parsed.local }) },
      wireParams: [limit, shape.period, a.month, a.day, a.weekday, a.timeMs, ...zoneWire(zone)],
      planName: common.planName,
      stateFormat: `calendarWindow/${period}/${timeZone}/${a.month}-${a.day}-${a.weekday}-${a.timeMs}`,
      refundable: true,
      blockMs: common.blockMs,
      burst: limit,
      ratePerSecond: (limit * 1000) / windowMs,
      // Leased like a fixed window, each lease dying with its calendar window.
      lease: {
        kind: 'fixed',
        limit,
        windowMs,
        windowAt: (nowMs) => {
          const { start, end } = boundsAt(shape, nowMs, { start: 0, end: 0 });
          return { start, end };
        },
      },
      share: (fraction) =>
        calendarWindow({
          ...ownOptions(common),
          limit: shareOf(limit, fraction),
          period,
          timeZone,
          ...(parsed.local === undefined ? {} : { anchor: parsed.local }),
        }),
      // Whole permits, rounded against the caller.
      rescale: (state, ratio) => ({ ...state, count: Math.ceil(state.count * ratio - 1e-9) }),
      usedAt: (state, nowMs) => current(state, nowMs).count,
      consume,
      refund,
      penalize,
    };
  });
}
