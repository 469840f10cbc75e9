-- smooth_bursty.lua: smoothBursty(permitsPerSecond, maxBurstSeconds, initialPermits). Mirrors algorithms/smooth.ts.
-- p = { permitsPerSecond, maxBurstSeconds, initialPermits }.

-- The shape (see smooth_rate.lua) and the permits a key seen for the first time holds.
local function bursty_shape(p)
  local rate, max_burst_seconds, initial = p[1], p[2], p[3]
  local stable = 1000 / rate
  local shape = { stable = stable, max_permits = max_burst_seconds * rate, cool_down = stable,
                  threshold = 0, slope = 0, warming = false }
  return shape, math.min(initial, shape.max_permits)
end

ALGORITHMS.smoothBursty = function(p, state, now_ms, permits, max_wait)
  local shape, fresh = bursty_shape(p)
  return smooth_consume(shape, fresh, state, now_ms, permits, max_wait)
end

PENALTIES.smoothBursty = function(p, state, now_ms, permits)
  local shape, fresh = bursty_shape(p)
  return smooth_penalize(shape, fresh, state, now_ms, permits)
end

USED.smoothBursty = function(p, state, now_ms)
  local shape, fresh = bursty_shape(p)
  return smooth_used(shape, fresh, state, now_ms)
end
