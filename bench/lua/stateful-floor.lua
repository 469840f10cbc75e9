-- stateful-floor.lua: a reference point for the Redis bench, not part of sluice. The least a stateful exact
-- decision can do in one script: read one token bucket, take Redis TIME, write it back with a TTL. No batch,
-- no policy, no waiting, no validation: what any exact limiter pays beyond the INCR floor's round trip.
--
-- KEYS[1]: the bucket, two packed doubles (tokens, updated at ms) or missing.
-- ARGV[1]: capacity; ARGV[2]: refill per second.
-- Reply: 1 if a permit was taken, else 0.

local raw = redis.call('GET', KEYS[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local capacity, refill = tonumber(ARGV[1]), tonumber(ARGV[2])
local tokens, updated = capacity, now
if raw then
  tokens, updated = struct.unpack('<dd', raw)
  local at = math.max(now, updated)
  tokens = math.min(capacity, tokens + (at - updated) * refill / 1000)
  updated = at
end
if tokens < 1 then return 0 end
tokens = tokens - 1
redis.call('SET', KEYS[1], struct.pack('<dd', tokens, updated), 'PX', math.ceil((capacity - tokens) * 1000 / refill) + 1000)
return 1
