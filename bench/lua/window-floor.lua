-- window-floor.lua: a reference point for the lone-script bench, not part of sluice. sluice's fixedWindow
-- decision for one request in the fewest Lua steps it can take: the decision time from Redis TIME, the
-- window's count and the ban marker in one MGET, a denial that counts nothing, and the reply sluice's client
-- reads (allowed, remaining, retry, reset, wait, the time used, banned). No rule parsing, no clamping, no ban,
-- no peek, no batch: what a read-decide-write limiter pays at least, where rate-limiter-flexible's script
-- counts every request (INCRBY first) and lets the key's expiry be its window.
--
-- KEYS[1]: the windows' name (the window number in hex follows it); KEYS[2]: the ban marker.
-- ARGV[1]: limit; ARGV[2]: windowMs; ARGV[3]: permits.
-- Reply: '<BdddddB' as decide_one.lua's.

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local limit, window_ms, permits = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local index = math.floor(now / window_ms)
local key = KEYS[1] .. string.format('%x', index)
local values = redis.call('MGET', key, KEYS[2])
local count = tonumber(values[1]) or 0
local reset = (index + 1) * window_ms - now
if count + permits > limit then return struct.pack('<BdddddB', 0, limit - count, reset, reset, 0, now, 0) end
if values[1] then
  redis.call('INCRBY', key, permits)
else
  redis.call('SET', key, permits, 'PX', string.format('%d', math.ceil(reset) + 1000))
end
return struct.pack('<BdddddB', 1, limit - count - permits, 0, reset, 0, now, 0)
