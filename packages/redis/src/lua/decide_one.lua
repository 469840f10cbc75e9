-- decide_one.lua: decides one request of a one-rule limiter: decide.lua's batch of one, without the batch
-- (no packed groups or requests to decode, no state table to fold updates into). A lone decision pays for
-- every step of a script, so this is the path most requests at low load take.
--
-- KEYS[1]: the rule's state key; KEYS[2]: the request
--         key's ban; KEYS[3]: the ban marker of their slot (read first: the ban only while it says one can be
--         in force).
--         KEYS[4], optional: the configuration version of their slot (see stale_version in prelude.lua).
-- ARGV: the rule (one text, as decide.lua reads rules: see parse_rules in prelude.lua); then now ('' = this
--       server's TIME), permits, maxWaitMs ('inf' allowed), 1 to peek or 0 to consume; then, optionally, the
--       client clock's skew bound ('' = none; see decision_time in one_rule.lua) and, with KEYS[4], the
--       configuration version the client decides under.
-- Errors: SLUICE_STALE <version> when the slot's configuration is newer than the client's (nothing decided).
-- Reply: decide.lua's reply for one request: '<BdddddB' (allowed, remaining, retryAfter, resetAfter, wait, the
--        decision time used, 1 when the key is blocked).

if redis.replicate_commands then pcall(redis.replicate_commands) end

local rules, a = parse_rules(1)
if rules == nil then return a end

local rule = rules[1]
local given = ARGV[a]
local now = decision_time(given == '' and (0 / 0) or tonumber(given), tonumber(ARGV[a + 4]), redis_time_ms)
local raw
local version_key = KEYS[4]
if version_key then raw = redis.call('MGET', KEYS[1], KEYS[3], version_key)
else raw = redis.call('MGET', KEYS[1], KEYS[3]) end
local before = state_of_value(raw[1])
if version_key then
  local stale = stale_version(version_key, raw[3], tonumber(ARGV[a + 5]))
  if stale then return stale end
end
raw = raw[2]
-- The key's ban is read only while the marker says a ban can be in force.
local marked = marker_until(raw)
local ban = nil
if marked > now then
  raw = redis.call('GET', KEYS[2])
  if raw then
    ban = unpack_doubles(raw)
    if not (ban[1] > now) then ban = nil end
  end
end

local permits, max_wait, peek = tonumber(ARGV[a + 1]), parse_num(ARGV[a + 2]), ARGV[a + 3] == '1'
local reply, state, ttl, banned = decide_one_rule(rules, before, ban, now, permits, max_wait, peek, true)
if state ~= before then write_state(KEYS[1], rule, before, state, ttl) end
if banned ~= nil then
  redis.call('SET', KEYS[2], pack_doubles(banned), 'PX', reclaim_px(banned[1] - now))
  raise_marker(KEYS[3], marked, banned[1], now)
end
return reply
