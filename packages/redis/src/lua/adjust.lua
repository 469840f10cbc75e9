-- adjust.lua: gives permits back to a key's rules or takes more from them, atomically (limiter.refund and
-- limiter.penalize; a policy decided slot by slot giving back what one slot took when another refused; a
-- leased node handing back what it did not spend). Each rule's REFUNDS or PENALTIES function is its
-- algorithm's refund or penalize in core.
--
-- KEYS: the state key of each rule to adjust, in rule order; for 'reset', then the key's ban and the lessees of
--       its leased states (sorted sets), in any order.
-- ARGV: the rules (one text, as decide.lua reads them: see parse_rules in prelude.lua); then
--       'refund', 'penalize' or 'reset' (limiter.reset: forget the states and the ban); permits (one count of
--       every rule, or each rule's own in rule order, comma-separated: per-rule permits; a rule given 0 is
--       adjusted by 0, as core does); when the grant was decided ('' = unknown, or: see the next);
--       how long before now it was asked for ('' = unknown; used when the time before is ''); now ('' =
--       this server's TIME); then, optionally, the configuration version the client adjusts under, with its
--       slot's configuration version key last in KEYS (see stale_version in prelude.lua).
-- Errors: SLUICE_STALE <version> when the slot's configuration is newer than the client's (nothing changed).
-- Reply: 'penalize': the number of keys changed; 'reset': the number of states it found and deleted, plus 1 for
--        a ban in force (redisEngine's `freed`; R = 0 with the ban alone is an unblock). 'refund': 1 when a rule it gave back to was denying
--        one permit before it (only then may a node hold a cached denial of the key, or a lease that found it
--        spent: the caller announces the refund), else 0. A refund keeps each key's TTL (KEEPTTL: giving permits
--        back never makes a state matter longer) and deletes a state left as good as fresh; a penalty sets the
--        state's new life.

local rules, a = parse_rules(1)
if rules == nil then return a end
local R = #rules
local op = ARGV[a]
-- Each rule's count: one for all, or one per rule.
local counts = {}
do
  local r = 0
  for count in string.gmatch(ARGV[a + 1], '[^,]+') do
    r = r + 1
    counts[r] = tonumber(count)
  end
  if r == 1 then for q = 2, R do counts[q] = counts[1] end
  elseif r ~= R and op ~= 'reset' then
    return redis.error_reply('ERR sluice: ' .. r .. ' permit counts for ' .. R .. ' rules')
  end
end
local now = time_arg(ARGV[a + 4])
local granted_at = 0 / 0
if ARGV[a + 2] ~= '' then granted_at = parse_num(ARGV[a + 2])
elseif ARGV[a + 3] ~= '' then granted_at = now - parse_num(ARGV[a + 3]) end
local client_version = tonumber(ARGV[a + 5])
if client_version then
  local stale = stale_version(KEYS[#KEYS], redis.call('GET', KEYS[#KEYS]), client_version)
  if stale then return stale end
end

for r = 1, R do
  local fn = rules[r].refund
  if op == 'penalize' then fn = rules[r].penalize elseif op == 'reset' then fn = true end
  if fn == nil then return redis.error_reply('ERR sluice: no ' .. op .. ' for algorithm ' .. rules[r].kind) end
end

local changed = 0
local was_denying = 0
for r = 1, R do
  local rule = rules[r]
  local permits = counts[r]
  if op == 'reset' then
    changed = changed + redis.call('DEL', KEYS[r])
  else
    local state = read_state(KEYS[r])
    if op == 'penalize' then
      local penalized, ttl = rule.penalize(rule.params, state, now, permits)
      write_state(KEYS[r], rule, nil, penalized, ttl)
      changed = changed + 1
    elseif state ~= nil then
      -- A state that grants one permit was never a cached denial anywhere: its refund needs no announcement.
      if was_denying == 0 and not rule.consume(rule.params, state, now, 1, 0) then was_denying = 1 end
      -- A refund never makes a state matter longer: the key's TTL stays (KEEPTTL).
      write_state(KEYS[r], rule, state, rule.refund(rule.params, state, now, permits, granted_at), nil)
      changed = changed + 1
    end
  end
end
if op == 'refund' then return was_denying end
-- reset: the key's ban and lessees, after its rules' states. A ban that has ended (not yet reclaimed) was
-- nothing to forget; lessees are who leased the key, not its standing: deleted, never counted.
if op == 'reset' then
  local last = #KEYS
  if client_version then last = last - 1 end
  for k = R + 1, last do
    -- GET of a sorted set answers an error table, not a string: pcall keeps it from failing the script.
    local raw = redis.pcall('GET', KEYS[k])
    if type(raw) == 'string' and unpack_doubles(raw)[1] > now then changed = changed + 1 end
    redis.call('DEL', KEYS[k])
  end
end
return changed
