-- presence.lua: this node's heartbeat in the fleets of one or more limiters (one prefix each), all of whose
-- keys share one Cluster slot. What a store knows of its fleet: how many nodes share each limiter's limits,
-- for the share its fail mode holds while Redis is away. Composed after the prelude (for time_arg).
-- Each key costs O(log N) whatever the fleet's size N: the node's own entry, the expired ones (each
-- removed once), and a count; never the membership itself.
--
-- Composed after the prelude and node_seen.lua (mark_seen: a node id two live processes were given).
--
-- KEYS[i]    a limiter's live nodes: a sorted set of node id -> when it was last seen, in ms
-- ARGV[1]    node id
-- ARGV[2]    how long a node counts as live after its last heartbeat, in ms
-- ARGV[3]    now in ms, or '' to read Redis TIME
-- ARGV[4]    '1' when the node is leaving (its limiter closed): remove it instead of recording it
-- ARGV[4+i]  the score this node's last answered heartbeat wrote to KEYS[i] ('' unknown; see node_seen.lua)
-- Reply: an array: the time written (now, as a string that reads back exactly), Redis's TIME in ms (for the
--        client to compare its clock with), then per KEYS[i] its live
--        nodes (this one included unless it is leaving or reused) and 1 when the id is another live
--        process's (reused: nothing written), else 0

local node = ARGV[1]
local live_ms = tonumber(ARGV[2])
local now = time_arg(ARGV[3])
local leaving = ARGV[4] == '1'
local dead_before = '(' .. string.format('%.17g', now - live_ms)
local reply = { string.format('%.17g', now), string.format('%.17g', ARGV[3] == '' and now or redis_time_ms()) }
for i, key in ipairs(KEYS) do
  local reused = false
  if leaving then
    redis.call('ZREM', key, node)
  else
    reused = mark_seen(key, node, now, ARGV[4 + i] or '')
  end
  redis.call('ZREMRANGEBYSCORE', key, '-inf', dead_before)
  reply[2 * i + 1] = redis.call('ZCARD', key)
  reply[2 * i + 2] = reused and 1 or 0
  redis.call('PEXPIRE', key, math.ceil(live_ms * 2))
end
return reply
