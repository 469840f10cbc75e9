-- heartbeat.lua: one node's heartbeat for @sluice/hybrid's divided mode. Records the node and its recent
-- demand, drops nodes not seen within the live window, and answers the live membership. Composed after
-- @sluice/redis's prelude (for time_arg).
--
-- KEYS[1]  members: a sorted set of node id -> time of its last heartbeat
-- KEYS[2]  demand: a hash of node id -> its recent demand (permits per second)
-- ARGV[1]  node id
-- ARGV[2]  its demand
-- ARGV[3]  how long a node stays live after its last heartbeat, in ms (3 heartbeats)
-- ARGV[4]  now in ms, or '' to read Redis TIME
-- ARGV[5]  '1' when the node is leaving (close): remove it instead of recording it
-- Reply: a flat array: node id, demand, node id, demand, ... for every live node

local live_ms = tonumber(ARGV[3])
local now = time_arg(ARGV[4])

if ARGV[5] == '1' then
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('HDEL', KEYS[2], ARGV[1])
else
  redis.call('ZADD', KEYS[1], now, ARGV[1])
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
end
local dead = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. (now - live_ms))
if #dead > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. (now - live_ms))
  redis.call('HDEL', KEYS[2], unpack(dead))
end
local members = redis.call('ZRANGE', KEYS[1], 0, -1)
local reply = {}
if #members > 0 then
  local demands = redis.call('HMGET', KEYS[2], unpack(members))
  for i, id in ipairs(members) do
    reply[#reply + 1] = id
    reply[#reply + 1] = demands[i] or '0'
  end
end
redis.call('PEXPIRE', KEYS[1], math.ceil(live_ms * 2))
redis.call('PEXPIRE', KEYS[2], math.ceil(live_ms * 2))
return reply
