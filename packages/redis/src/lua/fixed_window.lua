-- fixed_window.lua: fixedWindow(limit, windowMs). Mirrors algorithms/fixed-window.ts.
-- p = { limit, windowMs }; state = { windowStart, count } or nil.
ALGORITHMS.fixedWindow = function(p, state, now_ms, permits)
  local limit, window_ms = p[1], p[2]
  local window_start = math.floor(now_ms / window_ms) * window_ms
  local count = 0
  -- A clock that stepped back stays in the stored window rather than opening an older one.
  if state ~= nil and state[1] >= window_start then
    window_start = state[1]
    count = state[2]
  end
  local reset_after = window_start + window_ms - now_ms
  if permits > limit then
    local reset = 0
    if count > 0 then reset = reset_after end
    return never_fits(state, limit - count, reset, reset_after)
  end
  if count + permits <= limit then
    local next_count = count + permits
    return outcome(true, { window_start, next_count }, limit - next_count, 0, reset_after, 0, reset_after)
  end
  return outcome(false, state, limit - count, reset_after, reset_after, 0, reset_after)
end

-- Refund: only while the stored window is the one the grant was counted in (it contains granted_at). Once a
-- new window opened there is nothing to give back, and taking from the new one would over-admit: when in
-- doubt, keep the permits (a short under-admission), never give back what was not taken.
REFUNDS.fixedWindow = function(p, state, now, permits, granted_at)
  if state == nil or granted_at < state[1] or state[1] + p[2] <= granted_at then return state end
  return { state[1], math.max(0, state[2] - permits) }
end
