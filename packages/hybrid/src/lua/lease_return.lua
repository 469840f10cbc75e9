-- lease_return.lua: a node hands back permits it leased and did not spend (on close). A bucket is refilled
-- up to its capacity; a window's count is lowered only while that window (or, sliding, its successor) is
-- still the stored one. Never more than was taken: at worst the fleet under-admits.
--
-- KEYS[1]  the central state (see lease.lua)
-- ARGV[1]  kind: 'bucket' | 'fixed' | 'sliding'
-- ARGV[2]  bucket: capacity | windows: limit
-- ARGV[3]  bucket: refill per ms | windows: window length in ms
-- ARGV[4]  permits handed back
-- ARGV[5]  the lease's window_start (windows)
-- ARGV[6]  now in ms, or '' to read Redis TIME
-- Reply: the permits actually put back

local kind = ARGV[1]
local p1 = tonumber(ARGV[2])
local p2 = tonumber(ARGV[3])
local n = tonumber(ARGV[4])
local lease_window = tonumber(ARGV[5])
local now = now_ms(ARGV[6])

local raw = redis.call('GET', KEYS[1])
if not raw then return 0 end
local back = 0
if kind == 'bucket' then
  local tokens, at = struct.unpack('<dd', raw)
  if now > at then
    tokens = math.min(p1, tokens + (now - at) * p2)
    at = now
  end
  back = math.max(0, math.min(n, p1 - tokens))
  redis.call('SET', KEYS[1], struct.pack('<dd', tokens + back, at), 'KEEPTTL')
elseif kind == 'fixed' then
  local s, c = struct.unpack('<dd', raw)
  if s ~= lease_window then return 0 end
  back = math.min(n, c)
  redis.call('SET', KEYS[1], struct.pack('<dd', s, c - back), 'KEEPTTL')
else
  local s, p, c = struct.unpack('<ddd', raw)
  if s == lease_window then
    back = math.min(n, c)
    c = c - back
  elseif s == lease_window + p2 then
    back = math.min(n, p)
    p = p - back
  else
    return 0
  end
  redis.call('SET', KEYS[1], struct.pack('<ddd', s, p, c), 'KEEPTTL')
end
return back
