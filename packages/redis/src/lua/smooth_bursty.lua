-- smooth_bursty.lua: smoothBursty(permitsPerSecond, maxBurstSeconds, initialPermits). Mirrors algorithms/smooth.ts.
-- p = { permitsPerSecond, maxBurstSeconds, initialPermits }.
ALGORITHMS.smoothBursty = function(p, state, now_ms, permits, max_wait)
  local rate, max_burst_seconds, initial = p[1], p[2], p[3]
  local stable = 1000 / rate
  local shape = { stable = stable, max_permits = max_burst_seconds * rate, cool_down = stable,
                  threshold = 0, slope = 0, warming = false }
  return smooth_consume(shape, math.min(initial, shape.max_permits), state, now_ms, permits, max_wait)
end
