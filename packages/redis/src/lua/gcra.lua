-- gcra.lua: gcra(rate, burst). Mirrors algorithms/gcra.ts.
-- p = { rate, burst }; state = { tat } or nil.
ALGORITHMS.gcra = function(p, state, now_ms, permits, max_wait)
  local rate, burst = p[1], p[2]
  local interval_ms = 1000 / rate
  local tolerance_ms = burst * interval_ms
  local tat = now_ms
  if state ~= nil then tat = math.max(state[1], now_ms) end
  local remaining_now = whole_permits((now_ms + tolerance_ms - tat) / interval_ms)
  if permits > burst then return never_fits(state, remaining_now, tat - now_ms, tat - now_ms) end
  local new_tat = tat + permits * interval_ms
  local wait = new_tat - tolerance_ms - now_ms
  if wait <= max_wait + TOLERANCE_MS then
    local ttl = new_tat - now_ms
    local remaining = whole_permits((now_ms + tolerance_ms - new_tat) / interval_ms)
    return outcome(true, { new_tat }, remaining, 0, ttl, math.min(math.max(wait, 0), max_wait), ttl)
  end
  return outcome(false, state, remaining_now, wait - max_wait, tat - now_ms, 0, tat - now_ms)
end

-- Refund: the theoretical arrival time moves back by what the grant added, never before now.
REFUNDS.gcra = function(p, state, now_ms, permits, granted_at)
  if state == nil then return state end
  return { math.max(now_ms, state[1] - permits * (1000 / p[1])) }
end
