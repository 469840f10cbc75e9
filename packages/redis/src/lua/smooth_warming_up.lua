-- smooth_warming_up.lua: smoothWarmingUp(permitsPerSecond, warmupMs, coldFactor). Mirrors algorithms/smooth-rate.ts.
-- p = { permitsPerSecond, warmupMs, coldFactor }. A key seen for the first time starts cold (all permits stored).

local function warming_up_shape(p)
  local rate, warmup_ms, cold_factor = p[1], p[2], p[3]
  local stable = 1000 / rate
  local cold = stable * cold_factor
  local threshold = (0.5 * warmup_ms) / stable
  local max_permits = threshold + (2.0 * warmup_ms) / (stable + cold)
  return { stable = stable, max_permits = max_permits, cool_down = warmup_ms / max_permits,
           threshold = threshold, slope = (cold - stable) / (max_permits - threshold), warming = true }
end

ALGORITHMS.smoothWarmingUp = function(p, state, now_ms, permits, max_wait)
  local shape = warming_up_shape(p)
  return smooth_consume(shape, shape.max_permits, state, now_ms, permits, max_wait)
end

PENALTIES.smoothWarmingUp = function(p, state, now_ms, permits)
  local shape = warming_up_shape(p)
  return smooth_penalize(shape, shape.max_permits, state, now_ms, permits)
end

USED.smoothWarmingUp = function(p, state, now_ms)
  local shape = warming_up_shape(p)
  return smooth_used(shape, shape.max_permits, state, now_ms)
end
