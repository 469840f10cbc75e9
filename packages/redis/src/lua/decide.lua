-- decide.lua: decides a batch of requests, in order and each atomically, for keys that share one slot.
-- Requests that touch the same state (one hot key, or a global rule every key shares) fold into one
-- update of that state, written once at the end.
--
-- KEYS: every distinct state key of the batch, each once; then the bans of the request keys; then, when a
--       group has a ban, the ban marker of the slot (banMarkerKey in key-layout.ts): bans are read only while
--       it says one can be in force, and a ban written here raises it.
-- ARGV: the rules (one text: see parse_rules in prelude.lua); then a binary string of groups, each R + 1
--       packed '<I4' indices into KEYS: the state key of rule r for that group's request key, then the
--       key's ban (0: none in this slot); then a binary string of requests, each '<I4dddB': group index,
--       now (NaN = this server's TIME), permits, maxWaitMs (Infinity allowed), and 1 to peek (decide, write
--       nothing) or 0 to consume; then, optionally, the most a client-given time may be from this server's
--       TIME (a client clock's skew bound): a time further off is clamped to TIME +- it, so one node whose
--       clock runs ahead cannot take permits early and starve the others for as long as it is ahead ('' =
--       no bound); then, optionally, the configuration version the client decides under, with the slot's
--       configuration version key last in KEYS (see stale_version in prelude.lua); then, when a request's
--       rules count different permits (policies only), the permit rows: '<d' per rule and row,
--       the request's permits field being -row (from 1); the two before it are then '' when unused.
-- Errors: SLUICE_STALE <version> when the slot's configuration is newer than the client's (nothing decided).
-- Reply: one binary string, per request '<BdddddB': allowed, remaining, retryAfter, resetAfter, wait, the
--        decision time used, and a flag (1: the key is blocked; 2, R = 1 only: blocked by an explicit block(),
--        the header having no room for the ban's rule); then when R > 1, per rule '<Bddd': the
--        rule's own verdict (allowed, remaining had it granted, retryAfter, resetAfter), which the client
--        merges into the policy's decision with core's mergePolicy (the one merge; the header's remaining is
--        then 0). A blocked request took nothing: its header carries the rule's own verdict (R = 1) or the
--        banning rule's index from 0 (-1: an explicit block) in `remaining` (R > 1), and the rest of the ban in
--        `wait`; the client builds the decision with core's blockedDecision.
-- Bans: a ban is the state { until, rule } at the key's ban key. A denial by rules with blockMs starts one
-- (banAfter in core: the denying rule with the longest blockMs); while one lasts the key is only looked at.
-- Values: every state as its fields in packed doubles, at its KEYS entry: the script touches no other key
-- (see read_state in prelude.lua). When a state stops
-- mattering is the algorithm's own decision (a state past its time decides as a fresh one), so PEXPIRE only
-- reclaims memory: the state's remaining life plus a second.

if redis.replicate_commands then pcall(redis.replicate_commands) end

local rules, a = parse_rules(1)
if rules == nil then return a end
local R = #rules

local server_now = nil
local function server_time()
  if server_now == nil then server_now = redis_time_ms() end
  return server_now
end

-- Each group's R + 1 key indices, flat: rule r of group g is group_keys[(g - 1) * (R + 1) + r], its ban
-- group_keys[g * (R + 1)].
local group_keys = {}
do
  local packed = ARGV[a]
  local count = #packed / 4
  local p = 1
  for j = 1, count do group_keys[j], p = struct.unpack('<I4', packed, p) end
  a = a + 1
end
local W = R + 1

local requests = ARGV[a]
local max_skew = tonumber(ARGV[a + 1])
local Q = #requests / 29

-- KEYS holds the states (1..S), then the bans, then the slot's ban marker (when a group has a ban), then the
-- slot's configuration version (when the client sent its version): NK keys before that.
local client_version = tonumber(ARGV[a + 2])
local NK = #KEYS
if client_version then NK = NK - 1 end
local S = NK
for g = W, #group_keys, W do
  local bk = group_keys[g]
  if bk ~= 0 and bk <= S then S = bk - 1 end
end
local marker = nil
if S < NK then marker = KEYS[NK] end

-- Every state of the batch in as few calls as possible: MGET in chunks (Lua's unpack has a limit). States by
-- key index: parallel arrays rather than a table per key (a batch touches up to hundreds of keys, and every
-- table is an allocation the script pays for per decision).
local raw_values = {}
local function mget(list, from, to, into, offset)
  local k = from
  while k <= to do
    local last = math.min(to, k + 499)
    local chunk = redis.call('MGET', unpack(list, k, last))
    for j = 1, #chunk do into[k - offset + j - 1] = chunk[j] end
    k = last + 1
  end
end
mget(KEYS, 1, S, raw_values, 0)

-- The bans: read only while the marker says one can be in force (marked > now), all of the batch's at once
-- when the first request needs its own.
local marked = -INF
if client_version then
  -- The configuration version in the marker's read: read before anything is written.
  local raw
  if marker ~= nil then
    raw = redis.call('MGET', marker, KEYS[#KEYS])
    marked, raw = marker_until(raw[1]), raw[2]
  else
    raw = redis.call('GET', KEYS[#KEYS])
  end
  local stale = stale_version(KEYS[#KEYS], raw, client_version)
  if stale then return stale end
elseif marker ~= nil then
  marked = marker_until(redis.call('GET', marker))
end
local marker_read, marked_at = marked, nil
local bans_read, ban_values = false, {}
local function read_bans()
  bans_read = true
  if S + 1 <= NK - 1 then mget(KEYS, S + 1, NK - 1, ban_values, S) end
end

local state_of, loaded, read_of, rule_of = {}, {}, {}, {}
local expires_at, written_at = {}, {}
local dirty, dirty_keys = {}, {}

-- The state at key index k, of `rule` (nil: a ban), decoded on first use.
local function live(k, rule)
  if loaded[k] then return state_of[k] end
  loaded[k] = true
  local state
  if rule == nil then
    if not bans_read then read_bans() end
    state = state_of_value(ban_values[k - S])
  else
    state = state_of_value(raw_values[k])
  end
  state_of[k] = state
  read_of[k] = state
  return state
end

-- Keeps a state (nil: nothing to keep) of `rule` (nil: a ban) to be written when the batch is done.
local function store(k, state, now, ttl, rule)
  state_of[k] = state
  rule_of[k] = rule
  loaded[k] = true
  expires_at[k] = now + ttl
  written_at[k] = now
  if not dirty[k] then
    dirty[k] = true
    dirty_keys[#dirty_keys + 1] = k
  end
end

-- Keeps a ban started at `now` to be written when the batch is done, and marks it for the rest of the batch.
local function store_ban(bk, banned, now)
  store(bk, banned, now, banned[1] - now)
  if banned[1] > marked then marked, marked_at = banned[1], now end
end

-- The ban in force on ban key bk at now, or nil (bk 0: the ban lives in another slot).
local function ban_in_force(bk, now)
  if bk == 0 or not (marked > now) then return nil end
  local ban = live(bk)
  if ban ~= nil and ban[1] > now then return ban end
  return nil
end

local replies = {}

if R == 0 then
  -- No rule in this slot: a policy's ban, checked in the request key's own Cluster slot. Looked at only.
  local pos = 1
  for q = 1, Q do
    local i, t
    i, t, pos = struct.unpack('<I4d', requests, pos)
    pos = pos + 17
    local now = decision_time(t, max_skew, server_time)
    local ban = ban_in_force(group_keys[i], now)
    if ban ~= nil then
      replies[q] = struct.pack('<BdddddB', 0, ban[2], 0, 0, ban[1] - now, now, 1)
    else
      replies[q] = struct.pack('<BdddddB', 1, 0, 0, 0, 0, now, 0)
    end
  end
elseif R == 1 then
  -- The path every request of a one-rule limiter takes, many times per call on a hot key: what live,
  -- ban_in_force and store do for a key seen before in this batch is done inline.
  local rule = rules[1]
  local pos = 1
  for q = 1, Q do
    local i, t, permits, max_wait, peek_flag
    i, t, permits, max_wait, peek_flag, pos = struct.unpack('<I4dddB', requests, pos)
    local now
    if t ~= t then now = server_now or server_time() else now = decision_time(t, max_skew, server_time) end
    local k, bk = group_keys[(i - 1) * W + 1], group_keys[i * W]
    local before
    if loaded[k] then before = state_of[k] else before = live(k, rule) end
    local ban = nil
    if bk ~= 0 and marked > now then
      if loaded[bk] then ban = state_of[bk] else ban = live(bk) end
      if ban ~= nil and not (ban[1] > now) then ban = nil end
    end
    local reply, state, ttl, banned =
      decide_one_rule(rules, before, ban, now, permits, max_wait, peek_flag == 1, bk ~= 0)
    if state ~= before then
      if dirty[k] then
        state_of[k], expires_at[k], written_at[k] = state, now + ttl, now
      else
        store(k, state, now, ttl, rule)
      end
    end
    if banned ~= nil then store_ban(bk, banned, now) end
    replies[q] = reply
  end
else
  -- A policy: allowed only if every rule allows; a denial consumes from no rule. Mirrors decidePolicy in
  -- policy.ts; the numbers the caller sees are merged by the client (mergePolicy). The per-rule arrays are
  -- reused from request to request.
  local before, ok, kept, left, retry, reset, life = {}, {}, {}, {}, {}, {}, {}
  local permit_rows = ARGV[a + 3]
  local pos = 1
  for q = 1, Q do
    local i, t, permits, _max_wait, peek_flag
    i, t, permits, _max_wait, peek_flag, pos = struct.unpack('<I4dddB', requests, pos)
    local now = decision_time(t, max_skew, server_time)
    local base = (i - 1) * W
    local bk = group_keys[base + W]
    local ban = ban_in_force(bk, now)
    local allowed = true
    for r = 1, R do
      local rule = rules[r]
      before[r] = live(group_keys[base + r], rule)
      local count = permits
      if permits < 0 then count = struct.unpack('<d', permit_rows, ((-permits - 1) * R + r - 1) * 8 + 1) end
      local wait_r
      ok[r], kept[r], left[r], retry[r], reset[r], wait_r, life[r] = rule.consume(rule.params, before[r], now, count, 0)
      if not ok[r] then allowed = false end
    end
    local retry_after, reset_after, ttl = 0, reset[1], life[1]
    for r = 1, R do
      if not allowed then retry_after = math.max(retry_after, retry[r]) end
      reset_after = math.max(reset_after, reset[r])
      ttl = math.max(ttl, life[r])
    end
    local header
    if ban ~= nil then
      -- Blocked: looked at only.
      header = struct.pack('<BdddddB', 0, ban[2], 0, 0, ban[1] - now, now, 1)
    else
      if peek_flag == 1 then
        -- nothing is written
      elseif allowed then
        for r = 1, R do store(group_keys[base + r], kept[r], now, ttl, rules[r]) end
      else
        -- A rule that allowed keeps its state as it was; one that refused may have anchored a never-seen key.
        -- A denial deletes nothing, even a state a refusing rule takes as forgotten (another plan may read it).
        local anchored = false
        for r = 1, R do
          if ok[r] or kept[r] == nil then kept[r] = before[r] end
          if kept[r] ~= before[r] then anchored = true end
        end
        if anchored then
          for r = 1, R do
            if kept[r] ~= nil then store(group_keys[base + r], kept[r], now, ttl, rules[r]) end
          end
        end
      end
      local banned = nil
      if not allowed and peek_flag ~= 1 and bk ~= 0 then banned = ban_after(rules, ok, now) end
      if banned ~= nil then
        store_ban(bk, banned, now)
        header = struct.pack('<BdddddB', 0, banned[2], 0, 0, banned[1] - now, now, 1)
      else
        header = struct.pack('<BdddddB', allowed and 1 or 0, 0, retry_after, reset_after, 0, now, 0)
      end
    end
    local parts = { header }
    for r = 1, R do
      parts[r + 1] = struct.pack('<Bddd', ok[r] and 1 or 0, left[r], retry[r], reset[r])
    end
    replies[q] = table.concat(parts)
  end
end

for d = 1, #dirty_keys do
  local k = dirty_keys[d]
  write_state(KEYS[k], rule_of[k], read_of[k], state_of[k], expires_at[k] - written_at[k])
end
if marked_at ~= nil then raise_marker(marker, marker_read, marked, marked_at) end
return table.concat(replies)
