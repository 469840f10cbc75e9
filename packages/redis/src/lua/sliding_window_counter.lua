-- sliding_window_counter.lua: slidingWindowCounter(limit, windowMs). Mirrors algorithms/sliding-window-counter.ts.
-- p = { limit, windowMs }; state = { windowStart, previous, current } or nil.

-- A state matters until the window after its own ends (it is that window's previous): every write's ttl
-- (see DEADLINES in prelude.lua).
DEADLINES.slidingWindowCounter = function(p, state)
  return state[1] + 2 * p[2]
end

-- The state moved on to the window now_ms falls in (as it is while that window lasts; a clock that stepped
-- back stays in the stored window): windowStart, previous, current.
local function swc_roll(window_ms, state, now_ms)
  local window_start = math.floor(now_ms / window_ms) * window_ms
  if state ~= nil then
    if state[1] >= window_start then return state[1], state[2], state[3] end
    if state[1] + window_ms == window_start then return window_start, state[3], 0 end
  end
  return window_start, 0, 0
end

ALGORITHMS.slidingWindowCounter = function(p, state, now_ms, permits)
  local limit, window_ms = p[1], p[2]
  local window_start, previous, current = swc_roll(window_ms, state, now_ms)
  local now = math.max(now_ms, window_start)
  local weight = 1 - (now - window_start) / window_ms
  local estimate = previous * weight + current
  local window_end = window_start + window_ms
  local reset_after = 0
  if current > 0 then reset_after = window_end + window_ms - now_ms
  elseif previous > 0 then reset_after = window_end - now_ms end

  if permits > limit then return never_fits(state, whole_permits(limit - estimate), reset_after, reset_after) end
  if estimate + permits <= limit + EPSILON + (previous * TOLERANCE_MS) / window_ms then
    local ttl = window_end + window_ms - now_ms
    return outcome(true, { window_start, previous, current + permits },
      whole_permits(limit - estimate - permits), 0, ttl, 0, ttl)
  end
  local retry_at
  if current + permits <= limit then
    retry_at = window_start + window_ms * (1 - (limit - current - permits) / previous)
  else
    retry_at = window_end + window_ms * (1 - (limit - permits) / current)
  end
  return outcome(false, state, whole_permits(limit - estimate), retry_at - now_ms, reset_after, 0, reset_after)
end

-- From the window the grant was counted in (current or previous); with no grant time, the newest first.
REFUNDS.slidingWindowCounter = function(p, state, now_ms, permits, granted_at)
  if state == nil then return state end
  local window_ms = p[2]
  local window_start, previous, current = swc_roll(window_ms, state, now_ms)
  local from_current, from_previous = 0, 0
  if granted_at ~= granted_at then
    from_current = math.min(current, permits)
    from_previous = math.min(previous, permits - from_current)
  else
    local granted_window = math.floor(granted_at / window_ms) * window_ms
    if granted_window == window_start then from_current = math.min(current, permits)
    elseif granted_window + window_ms == window_start then from_previous = math.min(previous, permits) end
  end
  return { window_start, previous - from_previous, current - from_current }
end

PENALTIES.slidingWindowCounter = function(p, state, now_ms, permits)
  local window_ms = p[2]
  local window_start, previous, current = swc_roll(window_ms, state, now_ms)
  return { window_start, previous, current + permits }, window_start + 2 * window_ms - now_ms
end

-- The weighted estimate a decision compares with the limit.
USED.slidingWindowCounter = function(p, state, now_ms)
  local window_ms = p[2]
  local window_start, previous, current = swc_roll(window_ms, state, now_ms)
  return previous * (1 - (math.max(now_ms, window_start) - window_start) / window_ms) + current
end
