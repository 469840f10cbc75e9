-- gcra.lua: gcra(rate, burst). Mirrors algorithms/gcra.ts.
-- p = { rate, burst }; state = { aheadMs, at }: how far the theoretical arrival time was ahead of the last
-- decision time (offsets stay small, so no rounding piles up at epoch-scale times), or nil.

-- How far the TAT is ahead of now; a clock that steps back sees it further ahead (never a refill twice).
local function gcra_ahead(state, now_ms)
  if state == nil then return 0 end
  return math.max(0, state[1] - (now_ms - state[2]))
end

ALGORITHMS.gcra = function(p, state, now_ms, permits, max_wait)
  local rate, burst = p[1], p[2]
  local interval_ms = 1000 / rate
  local tolerance_ms = burst * interval_ms
  local ahead = gcra_ahead(state, now_ms)
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

-- The TAT moves by what the permits are worth: back (never behind now) for a refund, on for a penalty.
local function gcra_adjust(p, state, now_ms, permits)
  local ahead = math.max(0, gcra_ahead(state, now_ms) + permits * (1000 / p[1]))
  return { ahead, now_ms }, ahead
end

REFUNDS.gcra = function(p, state, now_ms, permits)
  if state == nil then return state end
  return (gcra_adjust(p, state, now_ms, -permits))
end

PENALTIES.gcra = gcra_adjust

USED.gcra = function(p, state, now_ms)
  return gcra_ahead(state, now_ms) / (1000 / p[1])
end
