/**
 * calendarWindow against an oracle that knows nothing of sluice's zone rules: local times read from Intl, each
 * boundary found among the instants that can first show it (a local time itself, or a clock change that
 * jumps over it). Random instants from 2000 to 2100 across many zones, then the cases a calendar gets wrong.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../foundation/clock.js';
import { type SluiceError, SluiceRangeError, SluiceTypeError } from '../foundation/errors.js';
import { createLimiter } from '../engine/limiter.js';
import { memoryStore } from '../engine/memory-store.js';
import { type CalendarWindowOptions, calendarWindow } from './calendar-window.js';
import { fixedWindow } from './fixed-window.js';
import { type CalendarPeriod, boundsAt } from './calendar/calendar-bounds.js';
import { zoneRules } from './calendar/zone-from-intl.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** Zones whose offsets have changed in every way a calendar can trip on, and plain ones. */
const ZONES = [
  'UTC',
  'Europe/Berlin',
  'America/New_York',
  'America/Sao_Paulo',
  'America/Santiago',
  'America/St_Johns',
  'Australia/Lord_Howe',
  'Asia/Kolkata',
  'Asia/Kathmandu',
  'Pacific/Chatham',
  'Pacific/Kiritimati',
  'Pacific/Apia',
  'Africa/Cairo',
  'Asia/Tehran',
  'Europe/Dublin',
  'Antarctica/Troll',
];
/** Zones whose future changes follow no yearly rule in tzdata: exact only up to 2060 (documented). */
const NO_RULE = new Set(['Africa/Casablanca', 'Africa/El_Aaiun', 'Asia/Gaza', 'Asia/Hebron']);

const formats = new Map<string, Intl.DateTimeFormat>();
/** Local wall time of instant t in zone tz, as Intl shows it (ms, as if it were UTC). */
function intlLocal(tz: string, t: number): number {
  let f = formats.get(tz);
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: tz,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formats.set(tz, f);
  }
  const parts: Record<string, number> = {};
  for (const p of f.formatToParts(t)) if (p.type !== 'literal') parts[p.type] = Number(p.value);
  const seconds = Date.UTC(
    parts.year as number,
    (parts.month as number) - 1,
    parts.day,
    parts.hour,
    parts.minute,
    parts.second,
  );
  return seconds + (((t % 1000) + 1000) % 1000);
}

/** The earliest instant Intl shows local time `wall` or later at, found among its candidates. */
function oracleInstant(tz: string, wall: number): number {
  const from = wall - 16 * HOUR;
  const to = wall + 16 * HOUR;
  const candidates: number[] = [];
  const offsets = new Set<number>();
  let t = from;
  let offset = intlLocal(tz, t) - t;
  offsets.add(offset);
  while (t < to) {
    const next = t + 15 * 60_000;
    const then = intlLocal(tz, next) - next;
    if (then !== offset) {
      let lo = t;
      let hi = next;
      while (hi - lo > 1) {
        const mid = Math.floor((lo + hi) / 2);
        if (intlLocal(tz, mid) - mid === offset) lo = mid;
        else hi = mid;
      }
      candidates.push(hi);
      offsets.add(then);
      offset = then;
    }
    t = next;
  }
  for (const o of offsets) candidates.push(wall - o);
  return Math.min(...candidates.filter((u) => intlLocal(tz, u) >= wall));
}

interface Anchor {
  month: number;
  day: number;
  weekday: number;
  timeMs: number;
}

const dim = (y: number, m: number) => new Date(Date.UTC(y, m, 0)).getUTCDate();

/** Local start of the k-th window around local time `wall`, counted by plain Date.UTC arithmetic. */
function oracleLocalStart(period: CalendarPeriod, a: Anchor, wall: number, shift: number): number {
  const d = new Date(wall);
  const [y, m, day] = [d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate()];
  const at = (yy: number, mm: number, dd: number) => Date.UTC(yy, mm - 1, dd) + a.timeMs;
  switch (period) {
    case 'day': {
      const today = at(y, m, day) > wall ? day - 1 : day;
      return at(y, m, today + shift);
    }
    case 'week': {
      let start = day - ((d.getUTCDay() - a.weekday + 7) % 7);
      if (at(y, m, start) > wall) start -= 7;
      return at(y, m, start + 7 * shift);
    }
    case 'month': {
      const monthly = (k: number) => {
        const yy = y + Math.floor((m - 1 + k) / 12);
        const mm = ((((m - 1 + k) % 12) + 12) % 12) + 1;
        return at(yy, mm, Math.min(a.day, dim(yy, mm)));
      };
      return monthly((monthly(0) > wall ? -1 : 0) + shift);
    }
    case 'year': {
      const yearly = (yy: number) => at(yy, a.month, Math.min(a.day, dim(yy, a.month)));
      return yearly((yearly(y) > wall ? y - 1 : y) + shift);
    }
  }
}

/** The window instant t falls in, by the oracle. */
function oracleWindow(tz: string, period: CalendarPeriod, a: Anchor, t: number): [number, number] {
  const wall = intlLocal(tz, t);
  let k = 0;
  const startOf = (shift: number) => oracleInstant(tz, oracleLocalStart(period, a, wall, shift));
  while (startOf(k + 1) <= t) k++;
  while (startOf(k) > t) k--;
  return [startOf(k), startOf(k + 1)];
}

const periodArb = fc.constantFrom<CalendarPeriod>('day', 'week', 'month', 'year');
const anchorArb = fc.record({
  year: fc.integer({ min: 2000, max: 2030 }),
  month: fc.integer({ min: 1, max: 12 }),
  day: fc.integer({ min: 1, max: 31 }),
  hour: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 23 })),
  minute: fc.oneof(fc.constant(0), fc.constant(30), fc.integer({ min: 0, max: 59 })),
});
const pad = (n: number) => String(n).padStart(2, '0');

describe('calendarWindow boundaries, against Intl', () => {
  it('random instants 2001-2100, zones, periods and anchors: the window is the oracle’s, t inside it', {
    timeout: 60_000,
  }, () => {
    const allZones = Intl.supportedValuesOf('timeZone');
    const zoneArb = fc.oneof(fc.constantFrom(...ZONES), fc.constantFrom(...allZones));
    fc.assert(
      fc.property(
        zoneArb,
        periodArb,
        anchorArb,
        // From mid-2001: a year's window then starts in 2000 or later (sluice reads zones from 2000 on).
        fc.integer({ min: Date.UTC(2001, 5, 1), max: Date.UTC(2099, 11, 1) }),
        (tz, period, an, t) => {
          if (NO_RULE.has(tz) && t >= Date.UTC(2059, 0, 1)) return;
          const day = Math.min(an.day, dim(an.year, an.month));
          const anchor = `${an.year}-${pad(an.month)}-${pad(day)}T${pad(an.hour)}:${pad(an.minute)}`;
          const rule = calendarWindow({ limit: 1, period, timeZone: tz, anchor });
          const a: Anchor = {
            month: an.month,
            day,
            weekday: new Date(Date.UTC(an.year, an.month - 1, day)).getUTCDay(),
            timeMs: (an.hour * 60 + an.minute) * 60_000,
          };
          const [start, end] = oracleWindow(tz, period, a, t);
          const decision = rule.consume(undefined, t, 1, 0);
          expect({ tz, period, anchor, t, end: t + decision.resetAfterMs }).toEqual({ tz, period, anchor, t, end });
          expect((decision.state as { windowStart: number }).windowStart).toBe(start);
          expect(start).toBeLessThanOrEqual(t);
        },
      ),
      { numRuns: 300 },
    );
  });

  // About 150 of Intl's zones per run, each read once (tens of ms): a different sample every run.
  it('the zone rules read from Intl give Intl’s offset at random instants, in any zone Intl knows', {
    timeout: 60_000,
  }, () => {
    const zones = Intl.supportedValuesOf('timeZone');
    fc.assert(
      fc.property(
        fc.constantFrom(...zones),
        fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2100, 0, 1) }),
        (tz, t) => {
          if (NO_RULE.has(tz) && t >= Date.UTC(2060, 0, 1)) return;
          const rules = zoneRules(tz);
          const window = boundsAt({ period: 1, anchor: { month: 1, day: 1, weekday: 1, timeMs: 0 }, zone: rules }, t, {
            start: 0,
            end: 0,
          });
          // Local midnight of t's own local date, as Intl reads it, is the start of the day window.
          const wall = intlLocal(tz, t);
          expect(intlLocal(tz, window.start)).toBeGreaterThanOrEqual(wall - (wall % DAY));
          expect(window.start).toBe(oracleInstant(tz, wall - (((wall % DAY) + DAY) % DAY)));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('one boundary per window, exactly the limit per window: a limiter on a ManualClock walked across windows', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...ZONES),
        periodArb,
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: Date.UTC(2001, 5, 1), max: Date.UTC(2099, 0, 1) }),
        async (tz, period, limit, t0) => {
          const clock = new ManualClock(t0);
          const limiter = createLimiter({
            rules: calendarWindow({ limit, period, timeZone: tz }),
            store: memoryStore({ clock }),
          });
          for (let w = 0; w < 3; w++) {
            const [start, end] = oracleWindow(tz, period, { month: 1, day: 1, weekday: 1, timeMs: 0 }, clock.now());
            let granted = 0;
            // Requests spread over the window: at its start (or now), in its middle, at its last millisecond.
            for (const at of [clock.now(), Math.floor((clock.now() + end) / 2), end - 1]) {
              clock.set(at);
              for (let i = 0; i <= limit; i++) if ((await limiter.tryAcquire('k')).allowed) granted++;
            }
            expect(granted).toBe(limit);
            const denied = await limiter.tryAcquire('k');
            expect(denied.retryAfterMs).toBe(1);
            expect(start).toBeLessThanOrEqual(clock.now());
            // The next window's first requests are at this one's end.
            clock.set(end);
          }
          await limiter.close();
        },
      ),
      { numRuns: 60 },
    );
  });
});

/** The window of instant `iso` under `options`, as ISO instants. */
function windowOf(options: Omit<CalendarWindowOptions, 'limit'>, iso: string): [string, string, number] {
  const t = Date.parse(iso);
  const d = calendarWindow({ limit: 1, ...options }).consume(undefined, t, 1, 0);
  const start = (d.state as { windowStart: number }).windowStart;
  const end = t + d.resetAfterMs;
  return [new Date(start).toISOString(), new Date(end).toISOString(), (end - start) / HOUR];
}

describe('calendarWindow: the days a calendar gets wrong', () => {
  it('Europe/Berlin: 2026-03-29 lasts 23 hours, 2026-10-25 lasts 25', () => {
    expect(windowOf({ period: 'day', timeZone: 'Europe/Berlin' }, '2026-03-29T12:00:00Z')).toEqual([
      '2026-03-28T23:00:00.000Z',
      '2026-03-29T22:00:00.000Z',
      23,
    ]);
    expect(windowOf({ period: 'day', timeZone: 'Europe/Berlin' }, '2026-10-25T12:00:00Z')).toEqual([
      '2026-10-24T22:00:00.000Z',
      '2026-10-25T23:00:00.000Z',
      25,
    ]);
    // A boundary at 02:30, an hour the spring change skips: that day's window starts at the change (03:00 CEST).
    expect(
      windowOf({ period: 'day', timeZone: 'Europe/Berlin', anchor: '2026-01-01T02:30' }, '2026-03-29T12:00:00Z'),
    ).toEqual(['2026-03-29T01:00:00.000Z', '2026-03-30T00:30:00.000Z', 23.5]);
    // 02:30 shown twice in October: the window starts at its first showing (CEST).
    expect(
      windowOf({ period: 'day', timeZone: 'Europe/Berlin', anchor: '2026-01-01T02:30' }, '2026-10-25T12:00:00Z'),
    ).toEqual(['2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z', 25]);
  });

  it('America/Sao_Paulo: 2018-11-04 had no midnight (its day starts at 01:00), 2019-02-16 had two 23:00s; no DST since 2019', () => {
    expect(windowOf({ period: 'day', timeZone: 'America/Sao_Paulo' }, '2018-11-04T12:00:00Z')).toEqual([
      '2018-11-04T03:00:00.000Z',
      '2018-11-05T02:00:00.000Z',
      23,
    ]);
    expect(windowOf({ period: 'day', timeZone: 'America/Sao_Paulo' }, '2019-02-16T12:00:00Z')).toEqual([
      '2019-02-16T02:00:00.000Z',
      '2019-02-17T03:00:00.000Z',
      25,
    ]);
    expect(windowOf({ period: 'month', timeZone: 'America/Sao_Paulo' }, '2026-11-15T12:00:00Z')).toEqual([
      '2026-11-01T03:00:00.000Z',
      '2026-12-01T03:00:00.000Z',
      720,
    ]);
  });

  it('Australia/Lord_Howe: a 30-minute change (24.5- and 23.5-hour days)', () => {
    expect(windowOf({ period: 'day', timeZone: 'Australia/Lord_Howe' }, '2026-04-05T06:00:00Z')).toEqual([
      '2026-04-04T13:00:00.000Z',
      '2026-04-05T13:30:00.000Z',
      24.5,
    ]);
    expect(windowOf({ period: 'day', timeZone: 'Australia/Lord_Howe' }, '2026-10-04T06:00:00Z')).toEqual([
      '2026-10-03T13:30:00.000Z',
      '2026-10-04T13:00:00.000Z',
      23.5,
    ]);
  });

  it('Asia/Kolkata: midnight is 18:30 UTC the day before; a week starts on Monday', () => {
    expect(windowOf({ period: 'day', timeZone: 'Asia/Kolkata' }, '2026-11-27T20:00:00Z')).toEqual([
      '2026-11-27T18:30:00.000Z',
      '2026-11-28T18:30:00.000Z',
      24,
    ]);
    expect(windowOf({ period: 'week', timeZone: 'Asia/Kolkata' }, '2026-11-27T12:00:00Z')).toEqual([
      '2026-11-22T18:30:00.000Z',
      '2026-11-29T18:30:00.000Z',
      168,
    ]);
  });

  it('2028-02-29: a day of its own, February of 29 days, a yearly anchor on it falls on 28 February in 2029', () => {
    expect(windowOf({ period: 'day' }, '2028-02-29T10:00:00Z')).toEqual([
      '2028-02-29T00:00:00.000Z',
      '2028-03-01T00:00:00.000Z',
      24,
    ]);
    expect(windowOf({ period: 'month' }, '2028-02-29T10:00:00Z')).toEqual([
      '2028-02-01T00:00:00.000Z',
      '2028-03-01T00:00:00.000Z',
      29 * 24,
    ]);
    expect(windowOf({ period: 'year', anchor: '2028-02-29' }, '2028-06-01T00:00:00Z')).toEqual([
      '2028-02-29T00:00:00.000Z',
      '2029-02-28T00:00:00.000Z',
      365 * 24,
    ]);
  });

  it('a billing anchor on the 31st: the last day of each shorter month, the 31st again when there is one', () => {
    const starts: string[] = [];
    let t = Date.parse('2027-01-15T00:00:00Z');
    for (let i = 0; i < 5; i++) {
      const d = calendarWindow({ limit: 1, period: 'month', anchor: '2026-01-31T09:00' }).consume(undefined, t, 1, 0);
      starts.push(new Date(t + d.resetAfterMs).toISOString());
      t += d.resetAfterMs;
    }
    expect(starts).toEqual([
      '2027-01-31T09:00:00.000Z',
      '2027-02-28T09:00:00.000Z',
      '2027-03-31T09:00:00.000Z',
      '2027-04-30T09:00:00.000Z',
      '2027-05-31T09:00:00.000Z',
    ]);
    const leap = calendarWindow({ limit: 1, period: 'month', anchor: '2026-01-31' }).consume(
      undefined,
      Date.parse('2028-02-10T00:00:00Z'),
      1,
      0,
    );
    expect(new Date(Date.parse('2028-02-10T00:00:00Z') + leap.resetAfterMs).toISOString()).toBe(
      '2028-02-29T00:00:00.000Z',
    );
  });

  it('an anchor given as an instant is read in the zone (a Date, or ISO with an offset)', () => {
    const fromDate = calendarWindow({
      limit: 1,
      period: 'day',
      timeZone: 'Asia/Kolkata',
      anchor: new Date('2026-01-01T03:30:00Z'),
    });
    expect(fromDate.params.anchor).toBe('2026-01-01T09:00:00.000');
    const fromIso = calendarWindow({
      limit: 1,
      period: 'day',
      timeZone: 'Asia/Kolkata',
      anchor: '2026-01-01T09:00+05:30',
    });
    expect(fromIso.wireParams).toEqual(fromDate.wireParams);
  });
});

describe('calendarWindow: bad input is a typed error naming the value', () => {
  const error = (options: unknown) => {
    try {
      calendarWindow(options as CalendarWindowOptions);
    } catch (e) {
      return e as SluiceError;
    }
    throw new Error('no error');
  };
  it.each([
    [{ limit: 1, period: 'day', timeZone: 'Mars/Olympus_Mons' }, SluiceRangeError, 'timeZone', /Mars\/Olympus_Mons/],
    [{ limit: 1, period: 'day', timeZone: 42 }, SluiceTypeError, 'timeZone', /got 42/],
    [
      { limit: 1, period: 'fortnight' },
      SluiceRangeError,
      'period',
      /'day', 'week', 'month' or 'year', got "fortnight"/,
    ],
    [{ limit: 1 }, SluiceTypeError, 'period', /got undefined/],
    [{ limit: 1, period: 'month', anchor: 'yesterday' }, SluiceRangeError, 'anchor', /got "yesterday"/],
    [{ limit: 1, period: 'month', anchor: '2026-02-30' }, SluiceRangeError, 'anchor', /no such day.*"2026-02-30"/],
    [{ limit: 1, period: 'month', anchor: '2026-01-31T24:00' }, SluiceRangeError, 'anchor', /no such time of day/],
    [{ limit: 1, period: 'month', anchor: new Date(Number.NaN) }, SluiceRangeError, 'anchor', /an invalid Date/],
    [{ limit: 1, period: 'month', anchor: 1_700_000_000_000 }, SluiceTypeError, 'anchor', /got 1700000000000/],
    [{ limit: 0, period: 'month' }, SluiceRangeError, 'limit', /got 0/],
  ])('%o', (options, type, option, message) => {
    const e = error(options);
    expect(e).toBeInstanceOf(type);
    expect(e.message).toMatch(message);
    expect(e.message).toContain(`calendarWindow: ${option}`);
    expect((e as unknown as SluiceRangeError).argument).toBe(option);
  });

  it('fixedWindow has one way to say a calendar period: its calendar options point to calendarWindow', () => {
    expect(() => fixedWindowWith({ calendar: 'month' })).toThrow(/calendarWindow/);
    expect(() => fixedWindowWith({ timeZone: 'Europe/Berlin' })).toThrow(/calendarWindow/);
  });
});

const fixedWindowWith = (extra: Record<string, unknown>) =>
  fixedWindow({ limit: 1, windowMs: DAY, ...(extra as object) } as Parameters<typeof fixedWindow>[0]);
