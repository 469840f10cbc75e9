-- leaky_bucket.lua: leakyBucket(capacity, leakPerSecond, mode). Mirrors algorithms/leaky-bucket.ts.
-- p = { capacity, leakPerSecond, mode }; police state = { level, updatedAt }; shape state = { queuedMs, at }
-- (the queue ahead at the last decision time, kept as an offset so no rounding piles up).

-- Police mode: the water at now_ms, and the time it is counted at (never back past the stored update).
local function leaky_drained(leak, state, now_ms)
  if state == nil then return 0, now_ms end
  local now = math.max(state[2], now_ms)
  return math.max(0, state[1] - ((now - state[2]) * leak) / 1000), now
end

-- Shape mode: the queue ahead at now_ms, in ms. A clock that steps back sees more queue ahead, never less.
local function leaky_queue_ahead(state, now_ms)
  if state == nil then return 0 end
  return math.max(0, state[1] - (now_ms - state[2]))
end

ALGORITHMS.leakyBucket = function(p, state, now_ms, permits, max_wait)
  local capacity, leak, mode = p[1], p[2], p[3]
  local ms_per_permit = 1000 / leak
  if mode == 'police' then
    local tolerance = EPSILON + (TOLERANCE_MS * leak) / 1000
    local level, now = leaky_drained(leak, state, now_ms)
    local empty_after = (level * 1000) / leak
    if permits > capacity then return never_fits(state, whole_permits(capacity - level), empty_after, empty_after) end
    if level + permits <= capacity + tolerance then
      local next_level = level + permits
      local ttl = (next_level * 1000) / leak
      return outcome(true, { next_level, now }, whole_permits(capacity - next_level), 0, ttl, 0, ttl)
    end
    local retry_after = ((level + permits - capacity) * 1000) / leak + (now - now_ms)
    return outcome(false, state, whole_permits(capacity - level), retry_after, empty_after, 0, empty_after)
  end

  local queued_ms = leaky_queue_ahead(state, now_ms)
  local queued = (queued_ms * leak) / 1000
  if permits > capacity then return never_fits(state, whole_permits(capacity - queued), queued_ms, queued_ms) end
  -- The queue (in time) may hold capacity permits, this request included.
  local room_ms = (capacity - permits) * ms_per_permit
  if queued_ms <= room_ms + TOLERANCE_MS and queued_ms <= max_wait + TOLERANCE_MS then
    local ttl = queued_ms + permits * ms_per_permit
    local remaining = whole_permits(capacity - queued - permits)
    return outcome(true, { ttl, now_ms }, remaining, 0, ttl, math.min(queued_ms, math.max(max_wait, 0)), ttl)
  end
  local retry_after = math.max(queued_ms - max_wait, queued_ms - room_ms)
  return outcome(false, state, whole_permits(capacity - queued), retry_after, queued_ms, 0, queued_ms)
end

-- Water poured in (police) or queue added (shape) by `permits`, never below empty: negative permits refund.
local function leaky_adjust(p, state, now_ms, permits)
  local leak, mode = p[2], p[3]
  if mode == 'police' then
    local level, now = leaky_drained(leak, state, now_ms)
    local next_level = math.max(0, level + permits)
    return { next_level, now }, (next_level * 1000) / leak
  end
  local queued_ms = math.max(0, leaky_queue_ahead(state, now_ms) + permits * (1000 / leak))
  return { queued_ms, now_ms }, queued_ms
end

REFUNDS.leakyBucket = function(p, state, now_ms, permits)
  if state == nil then return state end
  return (leaky_adjust(p, state, now_ms, -permits))
end

PENALTIES.leakyBucket = leaky_adjust

-- The water in the bucket, or the permits queued ahead.
USED.leakyBucket = function(p, state, now_ms)
  if p[3] == 'police' then return (leaky_drained(p[2], state, now_ms)) end
  return (leaky_queue_ahead(state, now_ms) * p[2]) / 1000
end
