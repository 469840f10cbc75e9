-- one_rule.lua: what decide.lua and decide_one.lua share: the decision clock, the ban a denial starts, and
-- one request against a one-rule limiter (composed after the prelude and the algorithms' files).

-- The decision time for a client-given time t (NaN: this server's TIME, read once per script call through
-- server_time). A client time further than max_skew (nil: no bound) from TIME is clamped to TIME +- it, so
-- one node whose clock runs ahead cannot take permits early and starve the others for as long as it is ahead.
local function decision_time(t, max_skew, server_time)
  if t ~= t then return server_time() end
  if max_skew == nil then return t end
  local s = server_time()
  if t > s + max_skew then return s + max_skew end
  if t < s - max_skew then return s - max_skew end
  return t
end

-- The ban a denial starts: the denying rule with the longest blockMs (the first of equals), as banAfter in
-- core; nil when none bans. `ok` holds each rule's verdict.
local function ban_after(rules, ok, now)
  local rule, longest = -1, 0
  for r = 1, #rules do
    if rules[r].block_ms > longest and not ok[r] then
      longest = rules[r].block_ms
      rule = r - 1
    end
  end
  if rule == -1 then return nil end
  return { now + longest, rule }
end

-- One request against a one-rule limiter (`rules` holds its one rule). `before` is the rule's state (nil:
-- none), `ban` the ban in force (nil: none), `may_ban` whether the key's ban lives where this call can write
-- it. Returns the reply ('<BdddddB', see decide.lua), the state to keep (`before` itself: nothing to write)
-- and its ttl, and the ban this denial started (nil: none). ONE_OK is the verdict list ban_after reads,
-- kept rather than made per request.
local ONE_OK = {}
local function decide_one_rule(rules, before, ban, now, permits, max_wait, peek, may_ban)
  local rule = rules[1]
  if ban ~= nil then
    -- Blocked: looked at only. The last byte says who banned: 2 an explicit block (rule -1), 1 the rule (the
    -- reply has no room for a rule index, and an explicit ban outranks the allow list where a rule's does not).
    local allowed, _, remaining, retry_after, reset_after = rule.consume(rule.params, before, now, permits, 0)
    local by = ban[2] == -1 and 2 or 1
    return struct.pack('<BdddddB', allowed and 1 or 0, remaining, retry_after, reset_after, ban[1] - now, now, by),
      before, 0, nil
  end
  local allowed, state, remaining, retry_after, reset_after, wait, ttl =
    rule.consume(rule.params, before, now, permits, max_wait)
  -- A grant, or a denial that anchored a never-seen key; a denial of a known key returns it untouched. A denial
  -- never deletes a state, even one this rule takes as forgotten: a limiter's other plans may still read it.
  if peek or state == nil then state = before end
  if not allowed and not peek and may_ban then
    ONE_OK[1] = false
    local banned = ban_after(rules, ONE_OK, now)
    if banned ~= nil then
      return struct.pack('<BdddddB', 0, remaining, retry_after, reset_after, banned[1] - now, now, 1), state, ttl,
        banned
    end
  end
  return struct.pack('<BdddddB', allowed and 1 or 0, remaining, retry_after, reset_after, wait, now, 0), state, ttl,
    nil
end
