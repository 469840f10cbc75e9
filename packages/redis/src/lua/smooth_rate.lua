-- smooth_rate.lua: Guava's SmoothRateLimiter math shared by smoothBursty and smoothWarmingUp.
-- Mirrors algorithms/smooth-rate.ts and algorithms/smooth.ts; keep the arithmetic in the same order.
-- A shape is { stable, max_permits, cool_down, threshold, slope, warming }; state = { storedPermits, aheadMs, at }.

-- Guava's (long) cast of a product: NaN (0 x Infinity) becomes 0.
local function cast_wait(ms)
  if ms ~= ms then return 0 end
  return ms
end

local function resynced_permits(stored, next_free, now, shape)
  if now <= next_free then return stored end
  local new_permits = (now - next_free) / shape.cool_down
  return math.min(shape.max_permits, stored + new_permits)
end

local function permits_to_time(shape, permits)
  return shape.stable + permits * shape.slope
end

local function stored_permits_to_wait_time(shape, stored, permits_to_take)
  if not shape.warming then return 0 end
  local above = stored - shape.threshold
  local ms = 0
  local to_take = permits_to_take
  if above > 0 then
    local above_to_take = math.min(above, to_take)
    local length = permits_to_time(shape, above) + permits_to_time(shape, above - above_to_take)
    ms = cast_wait((above_to_take * length) / 2.0)
    to_take = to_take - above_to_take
  end
  return ms + cast_wait(shape.stable * to_take)
end

-- Guava's reserveEarliestAvailable: returns stored, next free time, and the OLD next free time.
local function reserve_earliest_available(shape, stored_permits, next_free, permits, now)
  local stored = resynced_permits(stored_permits, next_free, now, shape)
  local free = math.max(next_free, now)
  local to_spend = math.min(permits, stored)
  local fresh = permits - to_spend
  local wait = stored_permits_to_wait_time(shape, stored, to_spend) + cast_wait(fresh * shape.stable)
  return stored - to_spend, free + wait, free
end

-- state = { storedPermits, aheadMs, at }: the next free time kept as how far it was ahead of the last decision
-- time (reservations advance it on every grant; offsets keep the rounding from piling up). Guava's math runs
-- on times relative to now (now = 0, next free = ahead).

-- When stored permits reach the burst, relative to now.
local function smooth_full_at(shape, stored, ahead)
  return ahead + (shape.max_permits - stored) * shape.cool_down
end

-- How long a full limiter is kept before it is forgotten (0 when fresh permits are the burst).
local function smooth_grace(shape, fresh_permits)
  if fresh_permits < shape.max_permits then return shape.max_permits * shape.cool_down end
  return 0
end

-- The state at now_ms: stored permits, how far the next free time is ahead, and whether it is fresh.
local function smooth_standing(shape, fresh_permits, state, now_ms)
  if state == nil then return fresh_permits, 0, true end
  -- Capped at the burst: a key whose plan changed to a smaller burst keeps no more than the new one allows.
  local stored = math.min(shape.max_permits, state[1])
  local ahead = state[2] - (now_ms - state[3])
  -- With fewer initial permits than the burst, a key that held its full burst for one more burst period is
  -- forgotten (see smooth.ts).
  if fresh_permits < shape.max_permits and 0 >= smooth_full_at(shape, stored, ahead) + smooth_grace(shape, fresh_permits) then
    return fresh_permits, 0, true
  end
  return stored, ahead, false
end

local function smooth_consume(shape, fresh_permits, state, now_ms, permits, max_wait)
  local stored_permits, ahead, fresh = smooth_standing(shape, fresh_permits, state, now_ms)
  if fresh then state = nil end
  local grace = smooth_grace(shape, fresh_permits)
  -- Guava's canAcquire looks only at the next free time, whatever the permits asked for.
  if ahead - max_wait > TOLERANCE_MS then
    local stored = resynced_permits(stored_permits, ahead, 0, shape)
    local full = smooth_full_at(shape, stored_permits, ahead)
    return outcome(false, state, whole_permits(stored), ahead - max_wait, math.max(0, full), 0, math.max(0, full + grace))
  end
  local stored, free, moment = reserve_earliest_available(shape, stored_permits, ahead, permits, 0)
  local full = smooth_full_at(shape, stored, free)
  local wait = math.min(math.max(moment, 0), max_wait)
  return outcome(true, { stored, free, now_ms }, whole_permits(stored), 0, math.max(0, full), wait, math.max(0, full + grace))
end

-- A reservation never waited: the permits are taken and the next free time moves on by what they cost.
local function smooth_penalize(shape, fresh_permits, state, now_ms, permits)
  local stored_permits, ahead = smooth_standing(shape, fresh_permits, state, now_ms)
  local stored, free = reserve_earliest_available(shape, stored_permits, ahead, permits, 0)
  return { stored, free, now_ms }, math.max(0, smooth_full_at(shape, stored, free) + smooth_grace(shape, fresh_permits))
end

-- What a state counts at now_ms: the burst (at least 1, as the rule's) less the permits stored.
local function smooth_used(shape, fresh_permits, state, now_ms)
  local stored, ahead, fresh = smooth_standing(shape, fresh_permits, state, now_ms)
  if fresh then return 0 end
  return math.max(1, shape.max_permits) - resynced_permits(stored, ahead, 0, shape)
end
