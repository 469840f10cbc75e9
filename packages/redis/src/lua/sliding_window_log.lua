-- sliding_window_log.lua: slidingWindowLog(limit, windowMs). Mirrors algorithms/sliding-window-log.ts.
-- p = { limit, windowMs }; state = flat time-ordered { t1, n1, t2, n2, ... } or nil.

-- Time never goes backwards past the newest grant, so a stepped-back clock cannot reopen the window.
local function swl_decision_time(entries, now_ms)
  local n = #entries
  if n > 0 then return math.max(now_ms, entries[n - 1]) end
  return now_ms
end

-- The index of the first grant still inside the window at now (a grant leaves at t + windowMs).
local function swl_first_live(entries, window_ms, now)
  local first = 1
  while first <= #entries and entries[first] + window_ms <= now do first = first + 2 end
  return first
end

-- The live entries with `permits` more granted at now (merged into the newest entry when it is at now).
local function swl_with_grant(entries, first, now, permits)
  local live = {}
  for i = first, #entries do live[#live + 1] = entries[i] end
  local m = #live
  if m > 0 and live[m - 1] == now then
    live[m] = live[m] + permits
  else
    live[m + 1] = now
    live[m + 2] = permits
  end
  return live
end

ALGORITHMS.slidingWindowLog = function(p, state, now_ms, permits)
  local limit, window_ms = p[1], p[2]
  local entries = state or {}
  local n = #entries
  local now = swl_decision_time(entries, now_ms)
  local first = swl_first_live(entries, window_ms, now)
  local used = 0
  for i = first, n, 2 do used = used + entries[i + 1] end
  local reset_after = 0
  if first <= n then reset_after = entries[n - 1] + window_ms - now_ms end

  -- A penalty may have logged more than the limit: nothing is left, never less.
  local left = math.max(0, limit - used)
  if permits > limit then return never_fits(state, left, reset_after, reset_after) end
  if used + permits <= limit then
    local ttl = now + window_ms - now_ms
    return outcome(true, swl_with_grant(entries, first, now, permits), limit - used - permits, 0, ttl, 0, ttl)
  end
  -- Oldest grants leave first; the request fits once enough of them have left.
  local excess = used + permits - limit
  local freed = 0
  local i = first
  while freed < excess do
    freed = freed + entries[i + 1]
    i = i + 2
  end
  local retry_after = entries[i - 2] + window_ms - now_ms
  return outcome(false, state, left, retry_after, reset_after, 0, reset_after)
end

-- With a grant time, grants made since then, oldest first, and none once a window has passed since it (the
-- grant may have left the log); with none, the newest (see sliding-window-log.ts).
REFUNDS.slidingWindowLog = function(p, state, now_ms, permits, granted_at)
  if state == nil then return state end
  local window_ms = p[2]
  local now = swl_decision_time(state, now_ms)
  local live = {}
  for i = swl_first_live(state, window_ms, now), #state do live[#live + 1] = state[i] end
  local left = permits
  local function take(i)
    local taken = math.min(left, live[i + 1])
    live[i + 1] = live[i + 1] - taken
    left = left - taken
  end
  if granted_at ~= granted_at then
    local i = #live - 1
    while i >= 1 and left > 0 do
      take(i)
      i = i - 2
    end
  elseif granted_at > now - window_ms then
    local i = 1
    while i <= #live and left > 0 do
      if live[i] >= granted_at then take(i) end
      i = i + 2
    end
  end
  local kept = {}
  for i = 1, #live, 2 do
    if live[i + 1] > 0 then
      kept[#kept + 1] = live[i]
      kept[#kept + 1] = live[i + 1]
    end
  end
  if #kept == 0 then return nil end
  return kept
end

PENALTIES.slidingWindowLog = function(p, state, now_ms, permits)
  local window_ms = p[2]
  local entries = state or {}
  local now = swl_decision_time(entries, now_ms)
  return swl_with_grant(entries, swl_first_live(entries, window_ms, now), now, permits), now + window_ms - now_ms
end

USED.slidingWindowLog = function(p, state, now_ms)
  local entries = state or {}
  local used = 0
  for i = swl_first_live(entries, p[2], swl_decision_time(entries, now_ms)), #entries, 2 do
    used = used + entries[i + 1]
  end
  return used
end
