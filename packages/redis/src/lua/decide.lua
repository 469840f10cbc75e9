-- decide.lua: decides a batch of requests, in order and each atomically, for keys that share one slot.
-- Requests that touch the same state (one hot key, or a global rule every key shares) fold into one
-- update of that state, written once at the end.
--
-- KEYS: every distinct state key of the batch, each once.
-- ARGV: R; then per rule its kind and parameters as text (PARAM_COUNT, in the prelude); then a binary string of
--       groups, each R packed '<I4' indices into KEYS (the state key of rule r for that group's request
--       key); then a binary string of requests, each '<I4dddB': group index, now (NaN = this server's
--       TIME), permits, maxWaitMs (Infinity allowed), and 1 to peek (decide, write nothing) or 0 to consume.
-- Reply: one binary string, per request '<Bddddd B' : allowed, remaining, retryAfter, resetAfter, wait,
--        the decision time used, the tightest rule (from 0); then when R > 1, per rule '<Bdd': allowed,
--        remaining, resetAfter.
-- Values: the algorithm's fields as packed doubles. When a state stops mattering is the algorithm's own
-- decision (a state past its time decides as a fresh one), so PEXPIRE only reclaims memory: the state's
-- remaining life plus a second.

if redis.replicate_commands then pcall(redis.replicate_commands) end

local RECLAIM_SLACK_MS = 1000

local rules, a = parse_rules(1)
if rules == nil then return a end
local R = #rules

local server_now = nil
local function read_now(t)
  if t == t then return t end -- NaN asks for the server's time
  if server_now == nil then
    local t = redis.call('TIME')
    server_now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
  end
  return server_now
end

-- Every state of the batch in as few calls as possible: MGET in chunks (Lua's unpack has a limit).
local raw_values = {}
local k = 1
while k <= #KEYS do
  local last = math.min(#KEYS, k + 499)
  local chunk = redis.call('MGET', unpack(KEYS, k, last))
  for j = 1, #chunk do raw_values[k + j - 1] = chunk[j] end
  k = last + 1
end

-- key index -> { state = {...} or nil, expires = ms, dirty = bool, written_at = now }
local slots = {}
local function slot(k)
  local entry = slots[k]
  if entry ~= nil then return entry end
  entry = { dirty = false, written_at = 0 }
  local raw = raw_values[k]
  if raw then entry.state = unpack_doubles(raw) end
  slots[k] = entry
  return entry
end

local function live(k)
  return slot(k).state
end

-- Writes every rule's state of one request (nil: nothing to keep) with the expiry they share.
local function store(group, states, now, ttl)
  for r = 1, R do
    local entry = slot(group[r])
    entry.state = states[r]
    entry.expires = now + ttl
    entry.dirty = true
    entry.written_at = now
  end
end

local groups = {}
do
  local packed = ARGV[a]
  local p = 1
  local g = 0
  while p <= #packed do
    g = g + 1
    local group = {}
    for r = 1, R do group[r], p = struct.unpack('<I4', packed, p) end
    groups[g] = group
  end
  a = a + 1
end

local replies = {}
local requests = ARGV[a]
local Q = #requests / 29
local pos = 1
for q = 1, Q do
  local i, t, permits, max_wait, peek_flag
  i, t, permits, max_wait, peek_flag, pos = struct.unpack('<I4dddB', requests, pos)
  local now = read_now(t)
  local peek = peek_flag == 1
  local group = groups[i]
  local before = {}
  for r = 1, R do before[r] = live(group[r]) end

  if R == 1 then
    local o = rules[1].consume(rules[1].params, before[1], now, permits, max_wait)
    -- A grant, or a denial that anchored a never-seen key; a denial of a known key returns it untouched.
    if o.state ~= before[1] and not peek then store(group, { o.state }, now, o.ttl) end
    replies[q] = struct.pack('<BdddddB', o.allowed and 1 or 0, o.remaining, o.retry_after, o.reset_after, o.wait, now, 0)
  else
    -- A policy: allowed only if every rule allows; a denial consumes from no rule. Mirrors policy.ts.
    local outcomes = {}
    local allowed = true
    for r = 1, R do
      outcomes[r] = rules[r].consume(rules[r].params, before[r], now, permits, 0)
      if not outcomes[r].allowed then allowed = false end
    end
    local remaining = {}
    for r = 1, R do
      local o = outcomes[r]
      remaining[r] = o.remaining
      if not allowed and o.allowed then remaining[r] = o.remaining + permits end
    end
    local tightest = 1
    for r = 2, R do
      local tighter
      if allowed then tighter = remaining[r] < remaining[tightest]
      else tighter = outcomes[r].retry_after > outcomes[tightest].retry_after end
      if tighter then tightest = r end
    end
    local retry_after, reset_after, ttl = 0, outcomes[1].reset_after, outcomes[1].ttl
    for r = 1, R do
      if not allowed then retry_after = math.max(retry_after, outcomes[r].retry_after) end
      reset_after = math.max(reset_after, outcomes[r].reset_after)
      ttl = math.max(ttl, outcomes[r].ttl)
    end
    if peek then
      -- nothing is written
    elseif allowed then
      local states = {}
      for r = 1, R do states[r] = outcomes[r].state end
      store(group, states, now, ttl)
    else
      local kept, anchored = {}, false
      for r = 1, R do
        if outcomes[r].allowed then kept[r] = before[r] else kept[r] = outcomes[r].state end
        if kept[r] ~= before[r] then anchored = true end
      end
      if anchored then store(group, kept, now, ttl) end
    end
    local parts = { struct.pack('<BdddddB', allowed and 1 or 0, remaining[tightest], retry_after, reset_after, 0, now, tightest - 1) }
    for r = 1, R do
      parts[r + 1] = struct.pack('<Bdd', outcomes[r].allowed and 1 or 0, remaining[r], outcomes[r].reset_after)
    end
    replies[q] = table.concat(parts)
  end
end

for k, entry in pairs(slots) do
  if entry.dirty then
    if entry.state == nil then
      redis.call('DEL', KEYS[k])
    else
      local px = math.ceil(entry.expires - entry.written_at) + RECLAIM_SLACK_MS
      redis.call('SET', KEYS[k], pack_doubles(entry.state), 'PX', px)
    end
  end
end
return table.concat(replies)
