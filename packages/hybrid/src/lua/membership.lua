-- membership.lua: one node's heartbeat in the fleets of one or more divided limiters whose keys share one Cluster
-- slot. Records the node and its recent demand, and answers a summary of the fleet in a few numbers, never the
-- membership: a heartbeat costs Redis O(log N) and a constant reply whatever the fleet's size N. What must look
-- at every node (dropping the dead, dividing the limit) runs once per interval for the whole fleet, in the first
-- heartbeat after the interval ends (or after a node joined or left), and its result is the summary every node
-- reads. Composed after the prelude (for time_arg).
--
-- The division is max-min fair (water-filling, as divideShares in shares.ts): every node asks max(demand, a tenth
-- of an equal split); nodes asking less than the water level get what they ask, the others the level; what is
-- left over (nobody asked for it) is split equally. A node's share is then min(asked, level) + spare.
--
-- KEYS[3i-2]  limiter i's live nodes: a sorted set of node id -> when it was last seen, in ms
-- KEYS[3i-1]  limiter i's demands: a sorted set of node id -> its recent demand, in permits per second
-- KEYS[3i]    limiter i's summary: a hash of at (when it was computed), nodes, level, spare
-- ARGV[1]  node id
-- ARGV[2]  how long a node counts as live after its last heartbeat, in ms (3 heartbeats)
-- ARGV[3]  now in ms, or '' to read Redis TIME
-- ARGV[4]  '1' when the node is leaving (its limiter closed): remove it instead of recording it
-- ARGV[5]  the interval at which the summary is computed again, in ms (the heartbeat interval)
-- ARGV[4+2i]  limiter i's limit, in permits per second
-- ARGV[5+2i]  this node's demand for limiter i, in permits per second
-- Reply: an array of 3 numbers per limiter, as strings: live nodes, water level ('inf': none), spare per node

local node = ARGV[1]
local live_ms = tonumber(ARGV[2])
local now = time_arg(ARGV[3])
local leaving = ARGV[4] == '1'
local interval = tonumber(ARGV[5])
local CHUNK = 1000

-- Drops the nodes unseen since `before` from both sets, a chunk at a time (no unpack of the whole fleet).
local function drop_dead(members, demands, before)
  local bound = '(' .. string.format('%.17g', before)
  while true do
    local dead = redis.call('ZRANGEBYSCORE', members, '-inf', bound, 'LIMIT', 0, CHUNK)
    if #dead == 0 then return end
    redis.call('ZREM', demands, unpack(dead))
    redis.call('ZREM', members, unpack(dead))
    if #dead < CHUNK then return end
  end
end

-- Water-fills `limit` over the live demands, read in ascending order a chunk at a time: the level (inf when
-- every node gets what it asks) and what is left per node.
local function divide(demands, n, limit)
  if n == 0 then return math.huge, 0 end
  local floor = (0.1 * limit) / n
  local left = limit
  local k = 0
  local start = 0
  while true do
    local chunk = redis.call('ZRANGE', demands, start, start + CHUNK - 1, 'WITHSCORES')
    if #chunk == 0 then break end
    for j = 2, #chunk, 2 do
      -- More demands than live nodes only if Redis evicted one set and not the other (refilled within an
      -- interval): an equal split at most until then.
      if k >= n then return limit / n, 0 end
      local asked = math.max(tonumber(chunk[j]), floor)
      local fair = left / (n - k)
      if asked >= fair then return fair, 0 end
      left = left - asked
      k = k + 1
    end
    if #chunk < 2 * CHUNK then break end
    start = start + CHUNK
  end
  return math.huge, left / n
end

local reply = {}
for i = 1, #KEYS / 3 do
  local members, demands, summary = KEYS[3 * i - 2], KEYS[3 * i - 1], KEYS[3 * i]
  local limit = tonumber(ARGV[4 + 2 * i])
  -- A node joining or leaving makes the summary stale: a leaver's share is taken up at the next heartbeat of
  -- any node (a wave of nodes leaving costs one division, not one each), a newcomer counts itself at once.
  if leaving then
    redis.call('ZREM', members, node)
    redis.call('ZREM', demands, node)
    redis.call('HDEL', summary, 'at')
  else
    if redis.call('ZADD', members, now, node) == 1 then redis.call('HDEL', summary, 'at') end
    redis.call('ZADD', demands, tonumber(ARGV[5 + 2 * i]), node)
  end
  local at, nodes, level, spare = unpack(redis.call('HMGET', summary, 'at', 'nodes', 'level', 'spare'))
  if not leaving and (at == false or now - tonumber(at) >= interval or now < tonumber(at)) then
    drop_dead(members, demands, now - live_ms)
    nodes = redis.call('ZCARD', members)
    level, spare = divide(demands, nodes, limit)
    level = level == math.huge and 'inf' or string.format('%.17g', level)
    spare = string.format('%.17g', spare)
    redis.call('HSET', summary, 'at', string.format('%.17g', now), 'nodes', nodes, 'level', level, 'spare', spare)
  end
  local ttl = math.ceil(live_ms * 2)
  redis.call('PEXPIRE', members, ttl)
  redis.call('PEXPIRE', demands, ttl)
  redis.call('PEXPIRE', summary, ttl)
  reply[3 * i - 2] = tostring(nodes or 0)
  reply[3 * i - 1] = level or 'inf'
  reply[3 * i] = spare or '0'
end
return reply
