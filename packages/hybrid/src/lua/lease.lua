-- lease.lua: a node takes up to `want` permits from a central limiter in one atomic call. The permits are
-- debited here, before the node spends them, so the fleet never admits more than the central limit allows
-- (plus what nodes already hold). Used by @sluice/hybrid's leased mode.
--
-- KEYS[1]  the central state: packed little-endian doubles
--          bucket: tokens, updated_at | fixed: window_start, count | sliding: window_start, previous, current
-- KEYS[2]  the key's lessees: a sorted set of node id -> time of its last lease (same hash tag)
-- ARGV[1]  kind: 'bucket' (tokenBucket, gcra), 'fixed' (fixedWindow), 'sliding' (slidingWindowCounter)
-- ARGV[2]  bucket: capacity | windows: limit
-- ARGV[3]  bucket: refill per ms | windows: window length in ms
-- ARGV[4]  bucket: tokens of a key never seen | windows: unused
-- ARGV[5]  want: permits asked for (>= 1)
-- ARGV[6]  node id
-- ARGV[7]  how long a node counts as a live lessee after its last lease, in ms
-- ARGV[8]  now in ms, or '' to read Redis TIME
-- ARGV[9]  hoarding cap divisor d: one lease is at most burst / (d x live lessees), at least 1 (0: no cap)
-- Reply: struct '<ddddd': granted, retry_ms (until `want` permits could be leased; 0 now), expires_in_ms
--        (the lease dies then: the end of its window; -1 for a bucket), live lessees, window_start (0 for a bucket)

local kind = ARGV[1]
local p1 = tonumber(ARGV[2])
local p2 = tonumber(ARGV[3])
local p3 = tonumber(ARGV[4])
local want = tonumber(ARGV[5])
local live_ms = tonumber(ARGV[7])
local now = now_ms(ARGV[8])
local EPSILON = 1e-9

redis.call('ZADD', KEYS[2], now, ARGV[6])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - live_ms)
local live = redis.call('ZCARD', KEYS[2])
redis.call('PEXPIRE', KEYS[2], math.ceil(live_ms * 2))
local divisor = tonumber(ARGV[9])
if divisor > 0 then want = math.min(want, math.max(1, math.floor(p1 / (divisor * live)))) end

local raw = redis.call('GET', KEYS[1])
local granted, retry, expires, window_start = 0, 0, -1, 0

if kind == 'bucket' then
  local capacity, per_ms = p1, p2
  local tokens, at = p3, now
  if raw then tokens, at = struct.unpack('<dd', raw) end
  if now > at then
    tokens = math.min(capacity, tokens + (now - at) * per_ms)
    at = now
  end
  granted = math.max(0, math.min(want, math.floor(tokens + EPSILON)))
  tokens = tokens - granted
  local goal = math.min(want, capacity)
  if tokens + EPSILON < goal then retry = (goal - tokens) / per_ms end
  local full_in = (capacity - tokens) / per_ms
  redis.call('SET', KEYS[1], struct.pack('<dd', tokens, at), 'PX', math.ceil(full_in) + 1000)
elseif kind == 'fixed' then
  local limit, window = p1, p2
  window_start = math.floor(now / window) * window
  local count = 0
  if raw then
    local s, c = struct.unpack('<dd', raw)
    -- the same window, or a clock that stepped back: stay in the stored window
    if s >= window_start then window_start, count = s, c end
  end
  granted = math.max(0, math.min(want, limit - count))
  count = count + granted
  expires = window_start + window - now
  if count >= limit then retry = expires end
  redis.call('SET', KEYS[1], struct.pack('<dd', window_start, count), 'PX', math.ceil(expires) + 1000)
else
  local limit, window = p1, p2
  window_start = math.floor(now / window) * window
  local previous, current = 0, 0
  if raw then
    local s, p, c = struct.unpack('<ddd', raw)
    if s >= window_start then
      window_start, previous, current = s, p, c
      now = math.max(now, s)
    elseif s + window == window_start then
      previous = c
    end
  end
  local estimate = previous * (1 - (now - window_start) / window) + current
  granted = math.max(0, math.min(want, math.floor(limit - estimate + EPSILON)))
  current = current + granted
  expires = window_start + window - now
  if estimate + granted + 1 > limit + EPSILON then
    -- when the previous window's weight has fallen enough for one more permit, else the next window
    retry = expires
    if previous > 0 and current + 1 <= limit then
      local at = window_start + (1 - (limit - 1 - current) / previous) * window
      if at < window_start + window then retry = math.max(at - now, 0.001) end
    end
  end
  redis.call('SET', KEYS[1], struct.pack('<ddd', window_start, previous, current), 'PX', math.ceil(expires + window) + 1000)
end

return struct.pack('<ddddd', granted, retry, expires, live, window_start)
