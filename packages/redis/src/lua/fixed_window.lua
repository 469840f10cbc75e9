-- fixed_window.lua: fixedWindow(limit, windowMs). Mirrors algorithms/fixed-window.ts.
-- p = { limit, windowMs }; state = { windowStart, count } or nil.

-- A state matters until its window ends (every write's ttl: see DEADLINES in prelude.lua).
DEADLINES.fixedWindow = function(p, state)
  return state[1] + p[2]
end

-- The window now_ms counts in, and its count so far.
local function fixed_window_current(window_ms, state, now_ms)
  local start = math.floor(now_ms / window_ms) * window_ms
  -- A clock that stepped back stays in the stored window rather than opening an older one.
  if state ~= nil and state[1] >= start then return state[1], state[2] end
  return start, 0
end

ALGORITHMS.fixedWindow = function(p, state, now_ms, permits)
  local limit, window_ms = p[1], p[2]
  local window_start, count = fixed_window_current(window_ms, state, now_ms)
  return count_in_window(state, limit, window_start, count, window_start + window_ms - now_ms, permits)
end

-- Only from the window the grant was counted in, while it is the stored one (see fixed-window.ts).
REFUNDS.fixedWindow = function(p, state, now_ms, permits, granted_at)
  if state == nil then return state end
  local window_ms = p[2]
  local window_start, count = fixed_window_current(window_ms, state, now_ms)
  local in_window = granted_at ~= granted_at or (granted_at >= window_start and granted_at < window_start + window_ms)
  if window_start ~= state[1] or not in_window then return state end
  return { window_start, math.max(0, count - permits) }
end

USED.fixedWindow = function(p, state, now_ms)
  local _, count = fixed_window_current(p[2], state, now_ms)
  return count
end

PENALTIES.fixedWindow = function(p, state, now_ms, permits)
  local window_ms = p[2]
  local window_start, count = fixed_window_current(window_ms, state, now_ms)
  return { window_start, count + permits }, window_start + window_ms - now_ms
end
