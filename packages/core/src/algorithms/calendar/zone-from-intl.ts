import { SluiceRangeError, SluiceTypeError } from '../../foundation/errors.js';
import { describe } from '../../foundation/validate.js';
import { type CivilDate, DAY_MS, civilFromDays, weekdayOf } from './civil.js';
import { type RecurringChange, type ZoneRules, offsetAt, recurringChangeAt } from './zone-rules.js';

/** The table starts here: instants before 2000 take the offset in force on 2000-01-01. */
const FROM = Date.UTC(2000, 0, 1);
/** Changes are read from Intl up to here; a zone's rule is fitted to the years from FIT on. */
const UNTIL = Date.UTC(2060, 0, 1);
const FIT = Date.UTC(2032, 0, 1);
/** Intl is sampled weekly: no zone has changed its offset twice within a week since 2000. */
const STEP = 7 * DAY_MS;

const known = new Map<string, ZoneRules>();

/**
 * The rules of IANA time zone `timeZone` (see ZoneRules), read from this runtime's Intl once per zone and
 * kept. Reading costs tens of milliseconds (about 4,000 Intl calls), once per zone per process.
 * @example
 * offsetAt(zoneRules('Asia/Kolkata'), Date.now()) // 19_800_000
 */
export function zoneRules(timeZone: unknown): ZoneRules {
  if (typeof timeZone !== 'string') {
    throw new SluiceTypeError(
      'timeZone',
      timeZone,
      `timeZone must be an IANA time zone name, got ${describe(timeZone)}`,
    );
  }
  const cached = known.get(timeZone);
  if (cached !== undefined) return cached;
  const offsetOf = intlOffsets(timeZone);
  const rules = fitRules(timeZone, offsetOf);
  known.set(timeZone, rules);
  return rules;
}

/** The offset at an instant as this runtime's Intl says it, for one zone (a RangeError names an unknown one). */
function intlOffsets(timeZone: string): (t: number) => number {
  let format: Intl.DateTimeFormat;
  try {
    format = new Intl.DateTimeFormat('en-US', { timeZone, timeZoneName: 'longOffset' });
  } catch {
    throw new SluiceRangeError(
      'timeZone',
      timeZone,
      `timeZone must be an IANA time zone this runtime knows (e.g. "Europe/Berlin"), got ${describe(timeZone)}`,
    );
  }
  return (t) => {
    const name = format.formatToParts(t).find((part) => part.type === 'timeZoneName')?.value ?? '';
    const m = /^GMT(?:([+-])(\d{2}):(\d{2})(?::(\d{2}))?)?$/.exec(name);
    if (m === null)
      throw new SluiceRangeError(
        'timeZone',
        timeZone,
        `timeZone ${timeZone} gave an offset sluice cannot read: ${name}`,
      );
    if (m[1] === undefined) return 0;
    const ms = ((Number(m[2]) * 60 + Number(m[3])) * 60 + Number(m[4] ?? 0)) * 1000;
    return m[1] === '-' ? -ms : ms;
  };
}

interface Change {
  readonly at: number;
  readonly before: number;
  readonly after: number;
}

/** Every change of offset in [FROM, UNTIL): weekly samples, each change found to the millisecond. */
function changesOf(offsetOf: (t: number) => number): Change[] {
  const changes: Change[] = [];
  let t = FROM;
  let offset = offsetOf(t);
  while (t < UNTIL) {
    const next = Math.min(t + STEP, UNTIL);
    const then = offsetOf(next);
    if (then !== offset) {
      // The first instant in (t, next] on the new offset.
      let lo = t;
      let hi = next;
      while (hi - lo > 1) {
        const mid = Math.floor((lo + hi) / 2);
        if (offsetOf(mid) === offset) lo = mid;
        else hi = mid;
      }
      changes.push({ at: hi, before: offset, after: offsetOf(hi) });
      // A change found between samples may not be the only one: read on from it.
      t = hi;
      offset = offsetOf(hi);
      continue;
    }
    t = next;
  }
  return changes;
}

const civil: CivilDate = { year: 0, month: 0, day: 0 };

/**
 * The yearly change that `changes` (all to one offset) follow, or undefined when they follow none. A change
 * at 24:00 (Egypt's "lastThu 24:00") can fall on the 1st of the next month: it is read as the day before at
 * 24:00 when the day itself gives no rule.
 */
function recurringOf(changes: readonly Change[]): RecurringChange | undefined {
  return recurringFrom(changes, 0) ?? recurringFrom(changes, DAY_MS);
}

function recurringFrom(changes: readonly Change[], lateMs: number): RecurringChange | undefined {
  let found: { month: number; weekday: number; wallMs: number; offsetMs: number } | undefined;
  let first = 31;
  let last = 1;
  for (const c of changes) {
    const local = c.at + c.before - lateMs;
    const days = Math.floor(local / DAY_MS);
    civilFromDays(days, civil);
    const shape = {
      month: civil.month,
      weekday: weekdayOf(days),
      wallMs: local - days * DAY_MS + lateMs,
      offsetMs: c.after,
    };
    if (found === undefined) found = shape;
    else if (
      found.month !== shape.month ||
      found.weekday !== shape.weekday ||
      found.wallMs !== shape.wallMs ||
      found.offsetMs !== shape.offsetMs
    )
      return undefined;
    first = Math.min(first, civil.day);
    last = Math.max(last, civil.day);
  }
  if (found === undefined || last - first > 6) return undefined;
  return { ...found, day: first };
}

/**
 * The table and rule that reproduce `offsetOf` from 2000 to 2060: the zone's rule fitted to its changes from
 * 2032 on (two a year, or none), the table holding what came before the first year the rule reproduces.
 */
function fitRules(timeZone: string, offsetOf: (t: number) => number): ZoneRules {
  const changes = changesOf(offsetOf);
  const baseOffsetMs = offsetOf(FROM);
  const table = (until: number) => {
    const kept = changes.filter((c) => c.at < until);
    return { changes: kept.map((c) => c.at), offsets: kept.map((c) => c.after) };
  };
  const late = changes.filter((c) => c.at >= FIT);
  const offsets = [...new Set(late.map((c) => c.after))];
  const recurring =
    offsets.length === 2
      ? ([
          recurringOf(late.filter((c) => c.after === offsets[0])),
          recurringOf(late.filter((c) => c.after === offsets[1])),
        ] as const)
      : undefined;
  if (late.length > 0 && recurring?.[0] !== undefined && recurring[1] !== undefined) {
    const rule = [recurring[0], recurring[1]] as const;
    for (let year = 2000; year <= 2032; year++) {
      const ruleFromMs = Date.UTC(year, 0, 1);
      const zone: ZoneRules = { timeZone, baseOffsetMs, ...table(ruleFromMs), ruleFromMs, recurring: rule };
      if (reproduces(zone, changes, offsetOf, year)) return zone;
    }
  }
  // No yearly rule (a fixed offset from some year on, or changes no rule describes): the table to 2060, and
  // its last offset after.
  return { timeZone, baseOffsetMs, ...table(UNTIL), ruleFromMs: Infinity, recurring: undefined };
}

/** Whether `zone`'s rule, from `year` on, makes exactly the changes Intl reported, and starts on Intl's offset. */
function reproduces(
  zone: ZoneRules,
  changes: readonly Change[],
  offsetOf: (t: number) => number,
  year: number,
): boolean {
  const [a, b] = zone.recurring as readonly [RecurringChange, RecurringChange];
  const made: number[] = [];
  for (let y = year - 1; y <= 2060; y++) {
    for (const at of [recurringChangeAt(a, b.offsetMs, y), recurringChangeAt(b, a.offsetMs, y)])
      if (at >= zone.ruleFromMs && at < UNTIL) made.push(at);
  }
  made.sort((x, y) => x - y);
  const real = changes.filter((c) => c.at >= zone.ruleFromMs).map((c) => c.at);
  if (made.length !== real.length || made.some((at, i) => at !== real[i])) return false;
  return offsetAt(zone, zone.ruleFromMs) === offsetOf(zone.ruleFromMs);
}
