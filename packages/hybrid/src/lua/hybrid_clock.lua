-- hybrid_clock.lua: shared by the hybrid scripts (composed before each). Decision time in ms: the given
-- ARGV value (a client clock), or Redis TIME when it is ''.
local function now_ms(given)
  if given ~= '' then return tonumber(given) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
end
