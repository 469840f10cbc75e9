-- prelude.lua: constants and helpers shared by every algorithm (composed first into the decide script).
-- Mirrors packages/core/src/algorithms/algorithm.ts; keep the arithmetic in the same order.

local EPSILON = 1e-9
local TOLERANCE_MS = 1e-3
local INF = math.huge

-- Whole permits left, never negative, robust to a value a hair under an integer.
local function whole_permits(x)
  if x > 0 then return math.floor(x + EPSILON) end
  return 0
end

-- An algorithm's answer, as seven values rather than a table: decide.lua runs one per request, and a table
-- with seven named fields costs more than the arithmetic that fills it.
local function outcome(allowed, state, remaining, retry_after, reset_after, wait, ttl)
  return allowed, state, remaining, retry_after, reset_after, wait, ttl
end

-- A request that can never fit: denied with retry_after = Infinity, state untouched (it matters for ttl).
local function never_fits(state, remaining, reset_after, ttl)
  return outcome(false, state, remaining, INF, reset_after, 0, ttl)
end

-- A fixed window's decision once the window is known (its start, its count, the time to its end): the one rule
-- of fixedWindow and calendarWindow (countInWindow in fixed-window.ts).
local function count_in_window(state, limit, window_start, count, reset_after, permits)
  -- A penalty may have taken the count past the limit: nothing is left, never less.
  local left = math.max(0, limit - count)
  if permits > limit then
    local reset = 0
    if count > 0 then reset = reset_after end
    return never_fits(state, left, reset, reset_after)
  end
  if count + permits <= limit then
    local next_count = count + permits
    return outcome(true, { window_start, next_count }, limit - next_count, 0, reset_after, 0, reset_after)
  end
  return outcome(false, state, left, reset_after, reset_after, 0, reset_after)
end

-- Rule parameters travel as text ('inf' for Infinity); everything per request, per state and per reply
-- travels as little-endian IEEE doubles packed with the struct library: exact, and nothing to format or parse.
local function parse_num(s)
  if s == 'inf' then return INF end
  if s == '-inf' then return -INF end
  return tonumber(s)
end

-- Redis TIME in ms.
local function redis_time_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
end

-- Decision time in ms from an ARGV value: a client's time as text, or this server's TIME when it is ''.
local function time_arg(given)
  if given ~= '' then return parse_num(given) end
  return redis_time_ms()
end

-- A state's PX: its remaining life plus a second of slack (PEXPIRE only reclaims memory; the algorithm
-- decides when a state stops mattering), as an integer string: Redis formats a Lua number argument with
-- '%.17g', which costs more. A life beyond 2^53 (or not a number) is kept for 2^53 ms, which Redis accepts.
local MAX_PX = 2 ^ 53
local function reclaim_px(life_ms)
  local px = math.ceil(life_ms) + 1000
  if not (px < MAX_PX) then px = MAX_PX end
  return string.format('%d', px)
end

-- '<' followed by n 'd's, built once per length per call of the script (states are 1-3 doubles; a sliding
-- log longer).
local FORMATS = {}
local function doubles_format(n)
  local f = FORMATS[n]
  if f == nil then
    f = '<' .. string.rep('d', n)
    FORMATS[n] = f
  end
  return f
end

-- Packs a list of doubles, in chunks of 64 so that a long sliding log never exceeds Lua's unpack limit.
local function pack_doubles(values)
  local n = #values
  if n <= 64 then return struct.pack(doubles_format(n), unpack(values)) end
  local parts = {}
  for i = 1, n, 64 do
    local j = math.min(n, i + 63)
    parts[#parts + 1] = struct.pack(doubles_format(j - i + 1), unpack(values, i, j))
  end
  return table.concat(parts)
end

local function unpack_doubles(s)
  local count = #s / 8
  if count <= 64 then
    local values = { struct.unpack(doubles_format(count), s) }
    values[count + 1] = nil -- struct.unpack also returns the next position
    return values
  end
  local values = {}
  local pos = 1
  while #values < count do
    local chunk = math.min(64, count - #values)
    local got = { struct.unpack(doubles_format(chunk), s, pos) }
    pos = got[chunk + 1]
    for k = 1, chunk do values[#values + 1] = got[k] end
  end
  return values
end

-- ALGORITHMS[kind](p, state, now, permits, max_wait) decides one request against one state (nil: none yet) and
-- returns outcome(...)'s seven values: allowed, the state to keep, remaining, retry_after, reset_after, wait, ttl.
local ALGORITHMS = {}
-- REFUNDS[kind](p, state, now, permits, granted_at) gives back up to `permits` (the algorithm's refund in core):
-- the state (nil: as good as fresh, delete it). granted_at is when the grant was decided (NaN: unknown): a
-- window gives back only from the window it was counted in. Guava's prepay has none.
local REFUNDS = {}
-- PENALTIES[kind](p, state, now, permits) takes `permits` whatever the limit (the algorithm's penalize in
-- core): the state and how long it matters.
local PENALTIES = {}
-- USED[kind](p, state, now) is what the state counts against its key at now (the algorithm's usedAt in core):
-- what a change of the rule's parameters carries over (carry.lua).
local USED = {}
-- DEADLINES[kind](p, state), for an algorithm whose every write of a state sets its expiry from the state alone:
-- when the state stops mattering (ms). A write whose new state's deadline is no later than the stored one's
-- keeps the key's TTL (KEEPTTL), which costs Redis about 0.6 us less per key than setting PX again.
local DEADLINES = {}
-- Every algorithm keeps its state as one string of packed doubles at the rule's key, which the client names
-- in KEYS: a window algorithm's too ({ windowStart, its counts }), so a script touches no key it was not
-- given (a key named inside a script from its decision time is outside Redis's contract for scripts, and
-- servers such as Dragonfly refuse it).

-- Rules parsed before, by their ARGV text. Run as a function library, the definitions outlive a call, so a
-- limiter's rules are parsed once per server instead of on every call (under EVAL this starts empty each
-- call). The text is one ARGV string, so looking it up costs nothing: Lua interns every string, ARGV's too.
-- Bounded: past RULES_CACHE_MAX rule sets it starts over.
local RULES_CACHE, rules_cached = {}, 0
local RULES_CACHE_MAX = 1000

-- Reads the rules at ARGV[a]: one text of '\n'-separated fields, R, then per rule its kind, its parameter
-- count, its parameters (in the order the algorithm's wireParams gives them) and its blockMs (ruleArgs in
-- rule-args.ts writes it). Returns { kind, params, consume, refund, penalize, deadline, block_ms } per rule,
-- read-only (they may be shared with later calls), and the ARGV index after the rules; or nil and an error
-- reply for an algorithm this script does not hold or a text that is no rule list.
local function parse_rules(a)
  local text = ARGV[a]
  local rules = RULES_CACHE[text]
  if rules ~= nil then return rules, a + 1 end
  if text == nil then return nil, redis.error_reply('ERR sluice: no rule list at ARGV ' .. a) end
  local fields = {}
  for field in string.gmatch(text, '[^\n]+') do fields[#fields + 1] = field end
  local R = tonumber(fields[1])
  if R == nil then return nil, redis.error_reply('ERR sluice: no rule count at ARGV ' .. a) end
  rules = {}
  local f = 2
  for r = 1, R do
    local kind, count = fields[f], tonumber(fields[f + 1])
    if count == nil or ALGORITHMS[kind] == nil then
      return nil, redis.error_reply('ERR sluice: unknown algorithm ' .. tostring(kind))
    end
    local params = {}
    for j = 1, count do
      local v = fields[f + 1 + j]
      params[j] = parse_num(v) or v
    end
    local block_ms = tonumber(fields[f + 2 + count])
    if block_ms == nil then return nil, redis.error_reply('ERR sluice: rule ' .. r .. ' at ARGV ' .. a .. ' is cut short') end
    rules[r] = { kind = kind, params = params, consume = ALGORITHMS[kind], refund = REFUNDS[kind],
                 penalize = PENALTIES[kind], deadline = DEADLINES[kind], block_ms = block_ms }
    f = f + count + 3
  end
  if fields[f] ~= nil then return nil, redis.error_reply('ERR sluice: more than ' .. R .. ' rules at ARGV ' .. a) end
  if rules_cached >= RULES_CACHE_MAX then
    RULES_CACHE, rules_cached = {}, 0
  end
  RULES_CACHE[text] = rules
  rules_cached = rules_cached + 1
  return rules, a + 1
end

-- The state at `key` from its value (as GET or MGET answer it: false for none).
local function state_of_value(raw)
  if raw then return unpack_doubles(raw) end
  return nil
end

-- The state of the rule at `key` (nil: none).
local function read_state(key)
  return state_of_value(redis.call('GET', key))
end

-- Writes `state` of `rule` (nil: a ban) at `key`, replacing `before` (the state as read; nil: none), for `ttl`
-- ms: PX, or KEEPTTL when the key's expiry already covers the new state (see DEADLINES) or `ttl` is nil (a
-- refund: giving permits back never makes a state matter longer). `state` nil deletes it.
local function write_state(key, rule, before, state, ttl)
  if state == nil then return redis.call('DEL', key) end
  local deadline = rule and rule.deadline
  if ttl == nil or (before ~= nil and deadline ~= nil and deadline(rule.params, state) <= deadline(rule.params, before)) then
    return redis.call('SET', key, pack_doubles(state), 'KEEPTTL')
  end
  return redis.call('SET', key, pack_doubles(state), 'PX', reclaim_px(ttl))
end

-- A limiter's ban marker (banMarkerKey in key-layout.ts): the latest end of any ban written in its slot, so a
-- decision reads ban keys only while one can be in force. It outlives every ban it covers: its expiry is
-- that end plus a minute (a ban key's is its end plus a second), so nodes whose decision clocks disagree by
-- less than that never see a ban without its marker.
local MARKER_SLACK_MS = 60000

-- The end the marker's value says (-INF: no marker, no ban in force).
local function marker_until(raw)
  if raw then return tonumber(raw) end
  return -INF
end

-- Raises the marker at `key` to `until_ms` (decided at `now`) when it says less.
local function raise_marker(key, said, until_ms, now)
  if until_ms <= said then return end
  redis.call('SET', key, string.format('%.17g', until_ms), 'PX', reclaim_px(until_ms - now + MARKER_SLACK_MS))
end

-- Live limits (limiter.reconfigure): the configuration version of a limiter's slot (versionKey in
-- key-layout.ts), read beside a decision's other keys. `raw` is its value (false: none, version 1), `client`
-- the version the caller decides under. A caller behind it gets the error SLUICE_STALE and the version in
-- force: it reads the new configuration and asks again. A caller ahead of it raises it, so that once a node
-- has decided a slot's keys under a version, no node behind that version decides them. Returns the error
-- reply, or nil to go on.
local function stale_version(key, raw, client)
  local stored = tonumber(raw) or 1
  if stored > client then return redis.error_reply('SLUICE_STALE ' .. string.format('%d', stored)) end
  if stored < client then redis.call('SET', key, string.format('%d', client)) end
  return nil
end
