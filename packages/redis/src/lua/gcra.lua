-- gcra.lua: gcra(rate, burst). Mirrors algorithms/gcra.ts.
-- p = { rate, burst }; state = { aheadMs, at }: how far the theoretical arrival time was ahead of the last
-- decision time (offsets stay small, so no rounding piles up at epoch-scale times), or nil.
ALGORITHMS.gcra = function(p, state, now_ms, permits, max_wait)
  local rate, burst = p[1], p[2]
  local interval_ms = 1000 / rate
  local tolerance_ms = burst * interval_ms
  local ahead = 0
  if state ~= nil then ahead = math.max(0, state[1] - (now_ms - state[2])) end
  local remaining_now = whole_permits((tolerance_ms - ahead) / interval_ms)
  if permits > burst then return never_fits(state, remaining_now, ahead, ahead) end
  local new_ahead = ahead + permits * interval_ms
  local wait = new_ahead - tolerance_ms
  if wait <= max_wait + TOLERANCE_MS then
    local remaining = whole_permits((tolerance_ms - new_ahead) / interval_ms)
    return outcome(true, { new_ahead, now_ms }, remaining, 0, new_ahead, math.min(math.max(wait, 0), max_wait), new_ahead)
  end
  return outcome(false, state, remaining_now, wait - max_wait, ahead, 0, ahead)
end

-- Refund: the TAT moves back by what the grant added, never behind now.
REFUNDS.gcra = function(p, state, now_ms, permits, granted_at)
  if state == nil then return state end
  local ahead = math.max(0, state[1] - (now_ms - state[2]))
  return { math.max(0, ahead - permits * (1000 / p[1])), now_ms }
end
