-- leaky_bucket.lua: leakyBucket(capacity, leakPerSecond, mode). Mirrors algorithms/leaky-bucket.ts.
-- p = { capacity, leakPerSecond, mode }; police state = { level, updatedAt }; shape state = { queuedMs, at }
-- (the queue ahead at the last decision time, kept as an offset so no rounding piles up).
ALGORITHMS.leakyBucket = function(p, state, now_ms, permits, max_wait)
  local capacity, leak, mode = p[1], p[2], p[3]
  local ms_per_permit = 1000 / leak
  if mode == 'police' then
    local tolerance = EPSILON + (TOLERANCE_MS * leak) / 1000
    local level = 0
    local now = now_ms
    if state ~= nil then
      now = math.max(state[2], now_ms)
      level = math.max(0, state[1] - ((now - state[2]) * leak) / 1000)
    end
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

  local queued_ms = 0
  if state ~= nil then queued_ms = math.max(0, state[1] - (now_ms - state[2])) end
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

-- Refund: the water (police) or the queued time (shape) the grant added leaves again.
REFUNDS.leakyBucket = function(p, state, now_ms, permits, granted_at)
  if state == nil then return state end
  local leak, mode = p[2], p[3]
  if mode == 'police' then
    local now = math.max(state[2], now_ms)
    local level = math.max(0, state[1] - ((now - state[2]) * leak) / 1000)
    return { math.max(0, level - permits), now }
  end
  local queued = math.max(0, state[1] - (now_ms - state[2]))
  return { math.max(0, queued - permits * (1000 / leak)), now_ms }
end
