-- token_bucket.lua: tokenBucket(capacity, refillPerSecond, initial, maxDebt). Mirrors algorithms/token-bucket.ts.
-- p = { capacity, refillPerSecond, initial, maxDebt }; state = { tokens, updatedAt } or nil.
ALGORITHMS.tokenBucket = function(p, state, now_ms, permits, max_wait)
  local capacity, refill, initial, max_debt = p[1], p[2], p[3], p[4]
  local tokens_per_ms = refill / 1000
  local tolerance = EPSILON + TOLERANCE_MS * tokens_per_ms
  -- Tokens past the level at which a state stops mattering: full, or full for one more refill period.
  local forget_at = capacity
  if initial < capacity then forget_at = 2 * capacity end
  local tokens = initial
  local now = now_ms
  if state ~= nil then
    -- max(): a clock that steps back must not refill the same time twice.
    now = math.max(state[2], now_ms)
    tokens = math.min(capacity, state[1] + ((now - state[2]) * refill) / 1000)
    -- With initial below capacity, a key full for a whole refill period is forgotten (see token-bucket.ts).
    if initial < capacity and state[1] + ((now - state[2]) * refill) / 1000 >= 2 * capacity then
      state = nil
      tokens = initial
      now = now_ms
    end
  end
  local full_after = ((capacity - tokens) * 1000) / refill
  local life = ((forget_at - tokens) * 1000) / refill
  if permits > capacity then return never_fits(state, whole_permits(tokens), full_after, life) end
  local immediate = tokens + tolerance >= permits
  local affordable = tokens + max_wait * tokens_per_ms + tolerance >= permits
  if immediate or (affordable and tokens - permits + max_debt >= -tolerance) then
    local left = tokens - permits
    local ttl = ((forget_at - left) * 1000) / refill
    local wait = 0
    if not immediate then wait = math.min(((permits - tokens) * 1000) / refill, max_wait) + (now - now_ms) end
    return outcome(true, { left, now }, whole_permits(left), 0, ttl, wait, ttl)
  end
  local wait = ((permits - tokens) * 1000) / refill
  local debt_wait = ((permits - max_debt - tokens) * 1000) / refill
  local retry_after = math.max(wait - max_wait, debt_wait) + (now - now_ms)
  -- A key seen for the first time is anchored even when refused, so its initial fill starts refilling.
  if state == nil then
    return outcome(false, { tokens, now }, whole_permits(tokens), retry_after, full_after, 0, life)
  end
  return outcome(false, state, whole_permits(tokens), retry_after, full_after, 0, life)
end

-- Refund: the tokens go back (never above capacity); refilling is linear, so this undoes the grant.
REFUNDS.tokenBucket = function(p, state, now_ms, permits, granted_at)
  if state == nil then return state end
  local capacity, refill = p[1], p[2]
  local now = math.max(state[2], now_ms)
  local tokens = math.min(capacity, state[1] + ((now - state[2]) * refill) / 1000)
  return { math.min(capacity, tokens + permits), now }
end
