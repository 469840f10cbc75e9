-- calendar_window.lua: calendarWindow(limit, period, anchor, zone). Mirrors algorithms/calendar-window.ts and
-- the files of algorithms/calendar/ (civil.ts, zone-rules.ts, calendar-bounds.ts): the same arithmetic in the
-- same order, so a window's bounds here and in memory are the same numbers. Redis needs no time zone data:
-- the zone's offsets travel in the rule (zoneWire in zone-rules.ts).
-- p = { limit, period (1 day, 2 week, 3 month, 4 year), the anchor's month, day, weekday (0 Sunday) and time
--       of day in ms; then the zone: its base offset, n, n x (instant, offset), then 0, or 2, the instant its
--       yearly rule starts and per change its month, weekday, first day, local time (ms) and offset after }
-- state = { windowStart, count } or nil.

local CAL_DAY = 86400000
-- Offsets reach from -12 h to +14 h: every instant showing a local time lies within 15 h of it.
local CAL_REACH = 15 * 3600000

local function cal_days_from_civil(year, month, day)
  local y = year
  if month <= 2 then y = year - 1 end
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local shifted = month + 9
  if month > 2 then shifted = month - 3 end
  local doy = math.floor((153 * shifted + 2) / 5) + day - 1
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
end

-- The civil date of a day number: year, month, day.
local function cal_civil_from_days(days)
  local z = days + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local month = mp - 9
  if mp < 10 then month = mp + 3 end
  local year = yoe + era * 400
  if month <= 2 then year = year + 1 end
  return year, month, doy - math.floor((153 * mp + 2) / 5) + 1
end

local function cal_days_in_month(year, month)
  if month == 2 then
    if year % 4 == 0 and (year % 100 ~= 0 or year % 400 == 0) then return 29 end
    return 28
  end
  if month == 4 or month == 6 or month == 9 or month == 11 then return 30 end
  return 31
end

-- 0 Sunday ... 6 Saturday (Lua's % floors, as ((x % 7) + 7) % 7 does in JS).
local function cal_weekday(days)
  return (days + 4) % 7
end

-- The zone of a rule's parameters, read once per parsed rule set and kept on it.
local function cal_zone(p)
  local zone = p.zone
  if zone ~= nil then return zone end
  zone = { base = p[7], changes = {}, offsets = {} }
  local n = p[8]
  local i = 9
  for j = 1, n do
    zone.changes[j], zone.offsets[j] = p[i], p[i + 1]
    i = i + 2
  end
  if p[i] == 2 then
    zone.from = p[i + 1]
    zone.a = { month = p[i + 2], weekday = p[i + 3], day = p[i + 4], wall = p[i + 5], offset = p[i + 6] }
    zone.b = { month = p[i + 7], weekday = p[i + 8], day = p[i + 9], wall = p[i + 10], offset = p[i + 11] }
  end
  p.zone = zone
  return zone
end

-- The instant a yearly change happens in `year`, `before` being the offset until then (recurringChangeAt).
local function cal_change_at(change, before, year)
  local first = cal_days_from_civil(year, change.month, change.day)
  local days = first + (change.weekday - cal_weekday(first) + 7) % 7
  return days * CAL_DAY + change.wall - before
end

local function cal_year_of(t)
  local year = cal_civil_from_days(math.floor(t / CAL_DAY))
  return year
end

-- How many of the table's changes are at or before t.
local function cal_changes_upto(zone, t)
  local lo, hi = 0, #zone.changes
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if zone.changes[mid + 1] <= t then lo = mid + 1 else hi = mid end
  end
  return lo
end

-- The offset in force at instant t (offsetAt in zone-rules.ts).
local function cal_offset_at(zone, t)
  if zone.from ~= nil and t >= zone.from then
    local a, b = zone.a, zone.b
    local year = cal_year_of(t)
    local latest, offset = -INF, b.offset
    for y = year - 2, year do
      local at_a = cal_change_at(a, b.offset, y)
      if at_a <= t and at_a > latest then latest, offset = at_a, a.offset end
      local at_b = cal_change_at(b, a.offset, y)
      if at_b <= t and at_b > latest then latest, offset = at_b, b.offset end
    end
    return offset
  end
  local k = cal_changes_upto(zone, t)
  if k == 0 then return zone.base end
  return zone.offsets[k]
end

-- The first change of offset after instant x (nextChangeAfter).
local function cal_next_change_after(zone, x)
  local next_at = INF
  local k = cal_changes_upto(zone, x)
  if k < #zone.changes then next_at = zone.changes[k + 1] end
  if zone.from ~= nil then
    local a, b = zone.a, zone.b
    local year = cal_year_of(x)
    for y = year, year + 1 do
      local at_a, at_b = cal_change_at(a, b.offset, y), cal_change_at(b, a.offset, y)
      if at_a > x and at_a >= zone.from and at_a < next_at then next_at = at_a end
      if at_b > x and at_b >= zone.from and at_b < next_at then next_at = at_b end
    end
  end
  return next_at
end

-- The earliest instant whose local time is `wall` or later (instantOf in calendar-bounds.ts).
local function cal_instant_of(zone, wall)
  local early = cal_offset_at(zone, wall - CAL_REACH)
  local late = cal_offset_at(zone, wall + CAL_REACH)
  if early == late then return wall - early end
  local first, second = wall - early, wall - late
  local first_shows = cal_offset_at(zone, first) == early
  local second_shows = cal_offset_at(zone, second) == late
  if first_shows and second_shows then return math.min(first, second) end
  if first_shows then return first end
  if second_shows then return second end
  return math.min(cal_next_change_after(zone, second), first)
end

local function cal_first_weekday(weekday)
  return (weekday - 4) % 7
end

-- The local start of window number n (localStart).
local function cal_local_start(p, n)
  local period, time = p[2], p[6]
  if period == 1 then return n * CAL_DAY + time end
  if period == 2 then return (n * 7 + cal_first_weekday(p[5])) * CAL_DAY + time end
  if period == 3 then
    local year = math.floor(n / 12)
    local month = n - year * 12 + 1
    return cal_days_from_civil(year, month, math.min(p[4], cal_days_in_month(year, month))) * CAL_DAY + time
  end
  return cal_days_from_civil(n, p[3], math.min(p[4], cal_days_in_month(n, p[3]))) * CAL_DAY + time
end

-- The number of the window local time `wall` falls in (windowNumber).
local function cal_window_number(p, wall)
  local period, time = p[2], p[6]
  if period == 1 then return math.floor((wall - time) / CAL_DAY) end
  if period == 2 then return math.floor((math.floor((wall - time) / CAL_DAY) - cal_first_weekday(p[5])) / 7) end
  local year, month = cal_civil_from_days(math.floor(wall / CAL_DAY))
  local n = year
  if period == 3 then n = year * 12 + month - 1 end
  if wall < cal_local_start(p, n) then return n - 1 end
  return n
end

-- The window instant t falls in: start, end (boundsAt). The last one computed is kept on the rule, so the
-- decisions of a window compute nothing.
local function cal_bounds(p, t)
  if p.window_start ~= nil and t >= p.window_start and t < p.window_end then return p.window_start, p.window_end end
  local zone = cal_zone(p)
  local n = cal_window_number(p, t + cal_offset_at(zone, t))
  local start = cal_instant_of(zone, cal_local_start(p, n))
  local finish = cal_instant_of(zone, cal_local_start(p, n + 1))
  while t >= finish do
    n = n + 1
    start = finish
    finish = cal_instant_of(zone, cal_local_start(p, n + 1))
  end
  while t < start do
    n = n - 1
    finish = start
    start = cal_instant_of(zone, cal_local_start(p, n))
  end
  p.window_start, p.window_end = start, finish
  return start, finish
end

-- The window now_ms counts in given state: its start, end and count (a clock that stepped back stays in the
-- stored window rather than opening an older one).
local function cal_current(p, state, now_ms)
  local start, finish = cal_bounds(p, now_ms)
  if state == nil or state[1] < start then return start, finish, 0 end
  if state[1] ~= start then
    local _
    _, finish = cal_bounds(p, state[1])
  end
  return state[1], finish, state[2]
end

ALGORITHMS.calendarWindow = function(p, state, now_ms, permits)
  local window_start, finish, count = cal_current(p, state, now_ms)
  return count_in_window(state, p[1], window_start, count, finish - now_ms, permits)
end

-- Only from the window the grant was counted in, while it is the stored one (see calendar-window.ts).
REFUNDS.calendarWindow = function(p, state, now_ms, permits, granted_at)
  if state == nil then return state end
  local window_start, finish, count = cal_current(p, state, now_ms)
  local in_window = granted_at ~= granted_at or (granted_at >= window_start and granted_at < finish)
  if window_start ~= state[1] or not in_window then return state end
  return { window_start, math.max(0, count - permits) }
end

USED.calendarWindow = function(p, state, now_ms)
  local _, _, count = cal_current(p, state, now_ms)
  return count
end

PENALTIES.calendarWindow = function(p, state, now_ms, permits)
  local window_start, finish, count = cal_current(p, state, now_ms)
  return { window_start, count + permits }, finish - now_ms
end

-- A state matters until its window ends: a write in the window its key already lives for keeps the TTL.
DEADLINES.calendarWindow = function(p, state)
  local _, finish = cal_bounds(p, state[1])
  return finish
end
