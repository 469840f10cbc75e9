-- presence.lua: this node's heartbeat in the fleets of one or more limiters (one prefix each), all of whose
-- keys share one Cluster slot. What a store knows of its fleet: how many nodes share each limiter's limits,
-- for the share its fail mode holds while Redis is away. Composed after the prelude (for time_arg).
-- Each key costs O(log N) whatever the fleet's size N: the node's own entry, the expired ones (each
-- removed once), and a count; never the membership itself.
--
-- KEYS[i]  a limiter's live nodes: a sorted set of node id -> when it was last seen, in ms
-- ARGV[1]  node id
-- ARGV[2]  how long a node counts as live after its last heartbeat, in ms
-- ARGV[3]  now in ms, or '' to read Redis TIME
-- ARGV[4]  '1' when the node is leaving (its limiter closed): remove it instead of recording it
-- Reply: an array: the live nodes of each KEYS[i], this one included unless it is leaving

local node = ARGV[1]
local live_ms = tonumber(ARGV[2])
local now = time_arg(ARGV[3])
local leaving = ARGV[4] == '1'
local dead_before = '(' .. string.format('%.17g', now - live_ms)
local counts = {}
for i, key in ipairs(KEYS) do
  if leaving then
    redis.call('ZREM', key, node)
  else
    redis.call('ZADD', key, now, node)
  end
  redis.call('ZREMRANGEBYSCORE', key, '-inf', dead_before)
  counts[i] = redis.call('ZCARD', key)
  redis.call('PEXPIRE', key, math.ceil(live_ms * 2))
end
return counts
