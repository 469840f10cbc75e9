-- membership.lua: one node's heartbeat in the fleets of one or more divided limiters whose keys share one Cluster
-- slot. Records the node and its recent demand, and answers the node's own allocation, never the membership: a
-- heartbeat costs Redis O(log N) and a constant reply whatever the fleet's size N, a join or a leave included.
-- What must look at every node (dropping the dead, dividing the limit) runs once per interval for the whole
-- fleet, in the first heartbeat after the interval ends, and writes each node's allocation. Composed after the
-- prelude (for time_arg) and node_seen.lua (mark_seen: a node id two live processes were given).
--
-- The division is 'equal' (limit / N) or 'demand': max-min fair (water-filling, as divideShares in core's divide-shares.ts):
-- every node asks max(demand, a tenth of an equal split); nodes asking less than the water level get what they
-- ask, the others the level; what nobody asked for is split equally.
--
-- Allocations come in generations, one per interval, each division moving the current one to the previous. A
-- node is answered both, and holds the smaller (@sluice/hybrid's shares.ts): a node's share grows only once every node has had
-- an interval to see the division that shrinks another's, so the fleet's shares never sum past the limit while
-- a division spreads. A newcomer is divided for at the next division, and holds at once what no node held
-- before (without a reserve, or in the fleet's first division; see allocate), the rest from the division after
-- (the reserve serves it until then); a leaver's share
-- is divided among the others at the next division.
--
-- KEYS[5i-4]  limiter i's live nodes: a sorted set of node id -> when it was last seen, in ms
-- KEYS[5i-3]  limiter i's demands: a sorted set of node id -> its recent demand, in permits per second
-- KEYS[5i-2]  limiter i's summary: a hash of at (when the current division was made), nodes (live nodes then),
--             reserve (the reserve's fraction in it)
-- KEYS[5i-1]  limiter i's allocations: a hash of node id -> 'current previous', each a fraction of the limit
--             ('-' none): fractions, so that a division made under one limit holds under another (a node
--             that has not yet heard of limiter.reconfigure divides under the old limit, one that has under
--             the new: what they hold sums to at most the limit either way)
-- KEYS[5i]    the configuration version of limiter i's slot (live limits: see stale_version in the prelude);
--             absent: version 1
-- ARGV[1]  node id
-- ARGV[2]  how long a node counts as live after its last heartbeat, in ms (3 heartbeats)
-- ARGV[3]  now in ms, or '' to read Redis TIME
-- ARGV[4]  '1' when the node is leaving (its limiter closed): remove it instead of recording it
-- ARGV[5]  the interval at which the division is made again, in ms (the heartbeat interval)
-- ARGV[11i-5] limiter i's limit, in permits per second
-- ARGV[11i-4] this node's demand for limiter i, in permits per second
-- ARGV[11i-3] limiter i's division: 'equal' or 'demand'
-- ARGV[11i-2] limiter i's burst (a window's limit, a bucket's capacity), in permits
-- ARGV[11i-1] the part of the limit the shares divide (1 - the reserve); 1: no reserve
-- ARGV[11i]   '1' for a window rule (its reserve takes what rounding to whole permits leaves), '0' for a bucket
-- ARGV[11i+1] the fewest whole permits of the burst a node holds locally (a smaller share: the reserve's)
-- ARGV[11i+2] the score this node's last answered heartbeat wrote to limiter i's live nodes ('' unknown)
-- ARGV[11i+3] the live nodes this node last heard limiter i's fleet had (0: none, it never heard one)
-- ARGV[11i+4] the fleet size the node assumes before it heard one (assumedNodes)
-- ARGV[11i+5] the configuration version this node decides limiter i under (a slot behind it is raised)
--
-- The first division of a fleet is made for at least the fleet its founder expects: its founder never holds
-- a fleet of one's share while the rest of a fleet starting together is on its way (1,000 nodes started at
-- once: the first node's 70% of the limit held the reserve to 30% for two divisions). A node that knew a fleet
-- and finds none (Redis lost its keys: a restart, a failover) founds it again as the fleet it knew, and gives
-- no newcomer a share at once, so the reserve serves the fleet while it gathers.
-- Reply: the time written (now, as a string that reads back exactly), Redis's TIME in ms (for the client to
--        compare its clock with), then 7 strings per limiter: live nodes, this node's current and previous
--        allocation as fractions of the limit ('-': none), '1' when this call founded a new fleet (its first
--        division, by a node that knew no fleet: no node held any of the limit before), the reserve's fraction
--        of the limit in the current division ('-' without a reserve), '1' when the node id is another live
--        process's (nothing recorded, no allocation answered: the node joins again under an id of its own),
--        and the configuration version of the limiter's slot (a node behind it reads the configuration; 1 for a
--        node that found none while past version 1: the configuration may be lost, and it reads it too)
--
-- The reserve: a node holds its share locally as the rule scaled to divided x its allocated fraction (@sluice/hybrid's shares.ts),
-- only when that is at least one whole permit of the burst (else the reserve serves it); the reserve is what no
-- node holds: for a window, the burst less the whole permits held (what rounding down leaves goes to it); for
-- a bucket, 1 less the fractions held (a bucket's rate is not rounded). The same floating-point steps as
-- localFraction in @sluice/hybrid's shares.ts, so both sides round alike. A node holds the smaller of its last two allocations,
-- and the reserve leaves out what it holds before and after hearing a division: while a division spreads, what
-- nodes hold and either reserve a node may draw with stay within the limit.

local node = ARGV[1]
local live_ms = tonumber(ARGV[2])
local now = time_arg(ARGV[3])
local leaving = ARGV[4] == '1'
local interval = tonumber(ARGV[5])
local CHUNK = 1000

local function num(x)
  return string.format('%.17g', x)
end

-- Drops the nodes unseen since `before` from the fleet, a chunk at a time (no unpack of the whole fleet).
local function drop_dead(members, demands, allocations, before)
  local bound = '(' .. num(before)
  while true do
    local dead = redis.call('ZRANGEBYSCORE', members, '-inf', bound, 'LIMIT', 0, CHUNK)
    if #dead == 0 then return end
    redis.call('ZREM', demands, unpack(dead))
    redis.call('ZREM', members, unpack(dead))
    redis.call('HDEL', allocations, unpack(dead))
    if #dead < CHUNK then return end
  end
end

-- Water-fills `limit` over the live demands, read in ascending order a chunk at a time: the level (huge when
-- every node gets what it asks) and what is left per node.
local function water_level(demands, n, limit)
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

-- The fraction of the burst a node allocated `share` (a fraction of the limit) holds locally, and the whole
-- permits it holds (0: none, the reserve serves it). As localFraction in @sluice/hybrid's shares.ts, step for step.
local function held(share, burst, divided, least)
  local fraction = divided * math.min(1, share)
  local permits = math.floor(burst * fraction + 1e-9)
  if permits < least then return 0, 0 end
  return fraction, permits
end

-- Writes every live node's allocation as the current generation, each node's current one becoming its previous,
-- a chunk at a time. A newcomer (no allocation before) has no previous: its previous is what it may hold at
-- once, its part of the headroom, the part of the limit no node was allocated before (the whole limit in a new
-- fleet), so a fleet starting up holds its shares from its first division and the sum held stays within the
-- limit (the others hold at most their previous allocations). With a reserve, only in the fleet's first division:
-- after it, what no node was allocated is the last division's reserve, which nodes that have not heard this
-- division yet may still draw; a newcomer holding it too would count it twice (the reserve serves the newcomer
-- until the division after).
local function allocate(demands, allocations, n, limit, mode, burst, divided, windowed, least, first)
  local level, spare = math.huge, 0
  if mode == 'demand' and n > 0 then level, spare = water_level(demands, n, limit) end
  local floor = n > 0 and (0.1 * limit) / n or 0
  -- Per node: its new allocation, and its current and previous ones before this division (false: none).
  local ids, shares, currents, previouses = {}, {}, {}, {}
  local allocated, asked = 0, 0
  local start = 0
  while n > 0 do
    local chunk = redis.call('ZRANGE', demands, start, start + CHUNK - 1, 'WITHSCORES')
    if #chunk == 0 then break end
    local page = {}
    for j = 1, #chunk, 2 do page[#page + 1] = chunk[j] end
    local before = redis.call('HMGET', allocations, unpack(page))
    for j = 1, #page do
      local share = limit / n
      if mode == 'demand' then share = math.min(math.max(tonumber(chunk[2 * j]), floor), level) + spare end
      local current, previous = false, false
      if before[j] then current, previous = string.match(before[j], '^(%S+) (%S+)') end
      current, previous = tonumber(current) or false, tonumber(previous) or false
      local k = #ids + 1
      ids[k], shares[k], currents[k], previouses[k] = page[j], share / limit, current, previous
      if current then allocated = allocated + current else asked = asked + shares[k] end
    end
    if #chunk < 2 * CHUNK then break end
    start = start + CHUNK
  end
  local headroom = math.max(0, 1 - allocated)
  local part = (asked > 0 and (divided >= 1 or first)) and math.min(1, headroom / asked) or 0
  -- Until it hears this division a node holds what the last one let it hold (the smaller of its two
  -- allocations then); after, at most its new allocation, now or at the next division, while a node that has
  -- not heard that one yet may still draw with this reserve. The reserve is what no node holds in any of these.
  local fractions, permits = 0, 0
  for j = 1, #ids do
    local last_held = (currents[j] and previouses[j]) and math.min(currents[j], previouses[j]) or 0
    local f, p = held(math.max(shares[j], last_held), burst, divided, least)
    fractions, permits = fractions + f, permits + p
  end
  local reserve = windowed and (burst - permits) / burst or 1 - fractions
  for from = 1, #ids, CHUNK do
    local fields = {}
    for j = from, math.min(from + CHUNK - 1, #ids) do
      local previous = currents[j] and num(currents[j]) or (part > 0 and num(shares[j] * part)) or '-'
      fields[#fields + 1] = ids[j]
      fields[#fields + 1] = num(shares[j]) .. ' ' .. previous
    end
    redis.call('HSET', allocations, unpack(fields))
  end
  return math.max(0, reserve)
end

local reply = { num(now), num(ARGV[3] == '' and now or redis_time_ms()) }
for i = 1, #KEYS / 5 do
  local members, demands, summary, allocations = KEYS[5 * i - 4], KEYS[5 * i - 3], KEYS[5 * i - 2], KEYS[5 * i - 1]
  local a = 11 * i - 5
  local limit, mode = tonumber(ARGV[a]), ARGV[a + 2]
  local burst, divided, windowed = tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]), ARGV[a + 5] == '1'
  local least = tonumber(ARGV[a + 6])
  local known = tonumber(ARGV[a + 8]) or 0
  local assumed = tonumber(ARGV[a + 9]) or 1
  local stored = redis.call('GET', KEYS[5 * i])
  local version = tonumber(stored) or 1
  local decides_under = tonumber(ARGV[a + 10]) or 1
  if not leaving and version < decides_under then
    redis.call('SET', KEYS[5 * i], string.format('%d', decides_under))
    -- A node past version 1 finding no version at all: Redis lost the slot's keys (and so, most likely, the
    -- stored configuration). Answered 1, below the node's, so that it reads the configuration and, if it was
    -- lost, stores again what it knows (StoredConfiguration.inForce) before a node started since does.
    if stored then version = decides_under end
  end
  local reused = false
  if leaving then
    redis.call('ZREM', members, node)
    redis.call('ZREM', demands, node)
    redis.call('HDEL', allocations, node)
  else
    reused = mark_seen(members, node, now, ARGV[a + 7])
    if not reused then redis.call('ZADD', demands, tonumber(ARGV[a + 1]), node) end
  end
  local at, nodes, reserve = unpack(redis.call('HMGET', summary, 'at', 'nodes', 'reserve'))
  local founded = not leaving and at == false and known == 0
  -- A clock that went back past the last division also makes one (else the fleet would wait for it).
  if not leaving and (at == false or now - tonumber(at) >= interval or now < tonumber(at)) then
    drop_dead(members, demands, allocations, now - live_ms)
    nodes = redis.call('ZCARD', members)
    -- A fleet's first division is made for the fleet its founder knew or expects (see ARGV[11i+3]).
    local divide_among = at == false and math.max(nodes, known > 0 and known or assumed) or nodes
    reserve = num(allocate(demands, allocations, divide_among, limit, mode, burst, divided, windowed, least, founded))
    redis.call('HSET', summary, 'at', num(now), 'nodes', nodes, 'reserve', reserve)
    -- Renewed once per interval by the division any live node makes: the fleet's keys outlive its last node
    -- by 2 x liveMs.
    local ttl = math.ceil(live_ms * 2)
    for _, key in ipairs({ members, demands, summary, allocations }) do redis.call('PEXPIRE', key, ttl) end
  end
  local mine = (not leaving and not reused) and redis.call('HGET', allocations, node) or false
  local current, previous = '-', '-'
  if mine then current, previous = string.match(mine, '^(%S+) (%S+)$') end
  local r = 7 * i - 4
  reply[r] = tostring(nodes or 0)
  reply[r + 1] = current
  reply[r + 2] = previous
  reply[r + 3] = (founded and not reused) and '1' or '0'
  reply[r + 4] = (divided < 1 and reserve) or '-'
  reply[r + 5] = reused and '1' or '0'
  reply[r + 6] = string.format('%d', version)
end
return reply
