-- refund.lua: gives back permits a policy took in this slot when another slot then refused the request
-- (rules that cannot share a slot are consumed slot by slot; a denial anywhere consumes nothing in the end).
--
-- KEYS: the state key of each rule of this slot's part, in rule order.
-- ARGV: R; then per rule its kind, parameter count and parameters as text (as in decide.lua); then permits; then the time the
--       grant was decided at (decide.lua's reply); then now ('' = this server's TIME).
-- Reply: the number of keys changed. A refund keeps each key's TTL (KEEPTTL): giving permits back never
-- makes a state matter longer.

local rules, a = parse_rules(1)
if rules == nil then return a end
local R = #rules
for r = 1, R do
  if rules[r].refund == nil then return redis.error_reply('ERR sluice: no refund for algorithm ' .. rules[r].kind) end
end
local permits = tonumber(ARGV[a])
local granted_at = parse_num(ARGV[a + 1])
local now = time_arg(ARGV[a + 2])

local changed = 0
for r = 1, R do
  local raw = redis.call('GET', KEYS[r])
  if raw then
    local refunded = rules[r].refund(rules[r].params, unpack_doubles(raw), now, permits, granted_at)
    if refunded == nil then
      redis.call('DEL', KEYS[r])
    else
      redis.call('SET', KEYS[r], pack_doubles(refunded), 'KEEPTTL')
    end
    changed = changed + 1
  end
end
return changed
