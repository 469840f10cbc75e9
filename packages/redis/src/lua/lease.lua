-- lease.lua: a node takes up to `want` permits from a rule's central state in one atomic call. The permits
-- are debited here, before the node spends them, so the fleet never admits more than the rule allows (plus
-- what nodes already hold). Composed after @sluice/redis's prelude and the rule's algorithm file: a lease is
-- the algorithm's own consume (ALGORITHMS[kind]) of as many permits as it grants now, on the state exact mode
-- would keep, so there is no second copy of any algorithm's maths here. Hand-back is refund.lua.
--
-- KEYS[1]  the rule's central state, as decide.lua keeps it (see read_state in prelude.lua)
-- KEYS[2]  the key's lessees: a sorted set of node id -> time of its last lease (same hash tag)
-- KEYS[3]  optional: the configuration version of their slot (stale_version in the prelude: live limits)
-- ARGV     the rule as decide.lua reads rules (one text, R = 1: see parse_rules in prelude.lua); then
--          want: permits asked for (>= 1); node id; how long a node counts as a live lessee after its last
--          lease, in ms; now in ms ('' = Redis TIME); the rule's burst; the hoarding cap divisor d: one lease
--          is at most burst / (d x live lessees), at least 1 (0: no cap); '1' to register the node as a lessee
--          (and sweep the dead), '0' when it registered within the last third of live_ms (the set is only
--          counted: three commands fewer per lease, most leases of a node that leases often); then, with
--          KEYS[3], the configuration version the node leases under
-- Reply: struct '<dddddd': granted, retry_ms (until `want` permits could be leased; 0: now), the decision
--        time used (a windowed lease lives until its window ends), live lessees, whole permits the central
--        state has left after this lease (what the fleet can still lease; nodes report it with what they hold),
--        1 when this call registered the node (asked to, or the lessees were gone), else 0
-- Errors: SLUICE_STALE <version> when the slot's configuration is newer than the node's (nothing leased).

local rules, a = parse_rules(1)
if rules == nil then return a end
local rule = rules[1]
local want = tonumber(ARGV[a])
local node = ARGV[a + 1]
local live_ms = tonumber(ARGV[a + 2])
local now = time_arg(ARGV[a + 3])
local burst = tonumber(ARGV[a + 4])
local divisor = tonumber(ARGV[a + 5])

if KEYS[3] then
  local stale = stale_version(KEYS[3], redis.call('GET', KEYS[3]), tonumber(ARGV[a + 7]))
  if stale then return stale end
end

local register = ARGV[a + 6] == '1'
local live = 0
if not register then
  live = redis.call('ZCARD', KEYS[2])
  -- The set is gone (expired, or a Redis that restarted empty): this node registers after all.
  register = live == 0
end
if register then
  redis.call('ZADD', KEYS[2], now, node)
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - live_ms)
  live = redis.call('ZCARD', KEYS[2])
  redis.call('PEXPIRE', KEYS[2], math.ceil(live_ms * 2))
end
if divisor > 0 then want = math.min(want, math.max(1, math.floor(burst / (divisor * live)))) end

local state = read_state(KEYS[1])

-- The most the rule grants now: `want` if it can; else what its denial says is left, trying fewer until
-- one is granted (a denial's remaining is whole permits, so this settles in a step or two).
local granted = 0
local left = 0
local try = want
while try >= 1 do
  local allowed, kept, remaining, _, _, _, ttl = rule.consume(rule.params, state, now, try, 0)
  left = remaining
  if allowed then
    granted = try
    write_state(KEYS[1], rule, state, kept, ttl)
    state = kept
    break
  end
  if kept ~= state then
    -- A never-seen key is anchored even when refused, so it starts refilling from now.
    write_state(KEYS[1], rule, state, kept, ttl)
    state = kept
  end
  try = math.min(try - 1, remaining)
end

-- A short lease emptied the rule: when `want` permits would be there again (the node asks once a batch's
-- worth is back, not per permit).
local retry = 0
if granted < want then
  local _, _, _, retry_after = rule.consume(rule.params, state, now, want, 0)
  retry = retry_after
end

local registered = 0
if register then registered = 1 end
return struct.pack('<dddddd', granted, retry, now, live, left, registered)
