-- carry_key.lua: moves one key's states kept under a limiter's earlier rules to the rules in force
-- (limiter.reconfigure on Redis): a changed rule's states live under a name of its generation (see
-- LiveBinding), so the first node to touch a key after a change carries what the key used into the new
-- generation (carry_state in carry.lua) and deletes the old states. A key already holding a state under the
-- new rules keeps it (another node carried it, or decided it fresh). Composed after the prelude, the
-- algorithms' files and carry.lua.
--
-- KEYS[1]: the configuration version of the key's slot; then per carried rule, its state key under the rules
--          in force, then its state key under each earlier generation the carry reaches, newest first.
-- ARGV[1]: the configuration version the client decides under ('' = none: not checked); ARGV[2]: now ('' = this server's TIME);
--          ARGV[3]: C, the carried rules; then per carried rule: L (its earlier generations), the rule in force
--          (one rule as ruleArgs writes it) and its meta, then per earlier generation, newest first, its rule
--          and meta. A meta is '<limit>\n<burst>\n<stateFormat>\n<carry mode>' (the mode of the change from
--          that generation to the next; unused for the rule in force).
-- Reply: the number of states carried. Errors: SLUICE_STALE <version> (see stale_version in prelude.lua).

if redis.replicate_commands then pcall(redis.replicate_commands) end

local client_version = tonumber(ARGV[1])
if client_version then
  local stale = stale_version(KEYS[1], redis.call('GET', KEYS[1]), client_version)
  if stale then return stale end
end
local now = time_arg(ARGV[2])

-- A rule as carry_state reads it, with the parsed rule (read_state's) beside it.
local function rule_at(a)
  local rules, err = parse_rules(a)
  if rules == nil then error(err) end
  local rule = rules[1]
  local meta = {}
  for field in string.gmatch(ARGV[a + 1], '[^\n]+') do meta[#meta + 1] = field end
  return { kind = rule.kind, params = rule.params, limit = tonumber(meta[1]), burst = tonumber(meta[2]),
           format = meta[3], mode = meta[4], parsed = rule }
end

local carried = 0
local a, k = 4, 2
for _ = 1, tonumber(ARGV[3]) do
  local links = tonumber(ARGV[a])
  local to = rule_at(a + 1)
  a = a + 3
  local base = KEYS[k]
  local from, bases = {}, {}
  for j = 1, links do
    from[j], bases[j] = rule_at(a), KEYS[k + j]
    a = a + 2
  end
  k = k + links + 1
  if read_state(base) == nil then
    -- The newest earlier state, carried through every change since (each with its own mode).
    local state, found = nil, 0
    for j = 1, links do
      state = read_state(bases[j])
      if state ~= nil then
        found = j
        break
      end
    end
    for j = found, 1, -1 do
      local next_rule = (j == 1) and to or from[j - 1]
      state = carry_state(from[j], next_rule, state, now, from[j].mode)
    end
    if found > 0 then
      redis.call('DEL', unpack(bases))
      if state ~= nil then
        local kept, ttl = to.parsed.penalize(to.params, state, now, 0)
        write_state(base, to.parsed, nil, kept, ttl)
        carried = carried + 1
      end
    end
  end
end
return carried
