-- token_bucket.lua: tokenBucket(capacity, refillPerSecond, initial, maxDebt). Mirrors algorithms/token-bucket.ts.
-- p = { capacity, refillPerSecond, initial, maxDebt }; state = { tokens, updatedAt } or nil.

-- The bucket at now_ms: tokens after refilling, the time they are counted at, and whether it is fresh (never
-- seen, or forgotten: with initial below capacity, a key full for a whole refill period starts again).
local function token_bucket_refill(p, state, now_ms)
  local capacity, refill, initial = p[1], p[2], p[3]
  if state ~= nil then
    -- max(): a clock that steps back must not refill the same time twice.
    local now = math.max(state[2], now_ms)
    local gained = ((now - state[2]) * refill) / 1000
    local refilled = state[1] + gained
    -- Full at this capacity: tokens kept above it (a plan of a larger capacity) are capped, never forgotten.
    if not (initial < capacity and math.min(state[1], capacity) + gained >= 2 * capacity) then
      return math.min(capacity, refilled), now, false
    end
  end
  return initial, now_ms, true
end

-- Tokens past the level at which a state stops mattering: full, or full for one more refill period.
local function token_bucket_forget_at(p)
  if p[3] < p[1] then return 2 * p[1] end
  return p[1]
end

ALGORITHMS.tokenBucket = function(p, state, now_ms, permits, max_wait)
  local capacity, refill, max_debt = p[1], p[2], p[4]
  local tokens_per_ms = refill / 1000
  local tolerance = EPSILON + TOLERANCE_MS * tokens_per_ms
  local forget_at = token_bucket_forget_at(p)
  local tokens, now, fresh = token_bucket_refill(p, state, now_ms)
  if fresh then state = nil end
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

-- The tokens go back, never above capacity; a fresh bucket has nothing to get back.
REFUNDS.tokenBucket = function(p, state, now_ms, permits)
  local tokens, now, fresh = token_bucket_refill(p, state, now_ms)
  if fresh then return nil end
  return { math.min(p[1], tokens + permits), now }
end

-- Below zero and past maxDebt if need be: the bucket denies until it refills.
PENALTIES.tokenBucket = function(p, state, now_ms, permits)
  local tokens, now = token_bucket_refill(p, state, now_ms)
  local left = tokens - permits
  return { left, now }, ((token_bucket_forget_at(p) - left) * 1000) / p[2] + (now - now_ms)
end

USED.tokenBucket = function(p, state, now_ms)
  local tokens, _, fresh = token_bucket_refill(p, state, now_ms)
  if fresh then return 0 end
  return p[1] - tokens
end
