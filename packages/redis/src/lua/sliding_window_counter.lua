-- sliding_window_counter.lua: slidingWindowCounter(limit, windowMs). Mirrors algorithms/sliding-window-counter.ts.
-- p = { limit, windowMs }; state = { windowStart, previous, current } or nil.
ALGORITHMS.slidingWindowCounter = function(p, state, now_ms, permits)
  local limit, window_ms = p[1], p[2]
  local now = now_ms
  local window_start = math.floor(now / window_ms) * window_ms
  local previous, current = 0, 0
  if state ~= nil then
    if state[1] >= window_start then
      now = math.max(now, state[1])
      window_start = state[1]
      previous = state[2]
      current = state[3]
    elseif state[1] + window_ms == window_start then
      previous = state[3]
    end
  end
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

-- Refund: from the current window if the grant is still in it, from the previous one if it rolled over
-- once; otherwise keep the permits (never take from a window the grant was not counted in).
REFUNDS.slidingWindowCounter = function(p, state, now, permits, granted_at)
  if state == nil then return state end
  local window_ms = p[2]
  local granted_window = math.floor(granted_at / window_ms) * window_ms
  if state[1] == granted_window then
    return { state[1], state[2], math.max(0, state[3] - permits) }
  elseif state[1] == granted_window + window_ms then
    return { state[1], math.max(0, state[2] - permits), state[3] }
  end
  return state
end
