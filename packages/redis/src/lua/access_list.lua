-- access_list.lua: a limiter's allow and deny lists (limiter.allow, limiter.deny, the admin router, the CLI):
-- one hash of entries, a version every change raises, and a message on the limiter's list channel so every
-- node reads the list again at once (each also checks the version now and then: a missed message heals).
-- An entry's value is '<list>\n<expires at, ms since the epoch, or ''>\n<reason>'.
--
-- KEYS[1]  the entries (a hash: entry text -> value); KEYS[2] the version (both under the limiter's hash tag)
-- ARGV     op ('put' | 'remove' | 'read'); then
--          put: the most entries the hash may hold, now (ms since the epoch), the channel, then per entry its
--               text and value;
--          remove: the channel, then the texts;
--          read: the version the reader knows ('' none).
-- Reply    put: the new version; remove: how many entries there were; read: { version } when it is the one
--          the reader knows, else { version, text, value, text, value, ... }.
-- Errors   SLUICE_LIST_FULL <entries held>: the put would take the hash past its most (nothing was added).

local op = ARGV[1]

-- Raises the version and tells every node.
local function changed(channel)
  local version = redis.call('INCRBY', KEYS[2], 1)
  redis.call('PUBLISH', channel, tostring(version))
  return version
end

if op == 'put' then
  local most, now, channel = tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
  local new = 0
  for i = 5, #ARGV, 2 do
    if redis.call('HEXISTS', KEYS[1], ARGV[i]) == 0 then new = new + 1 end
  end
  local held = redis.call('HLEN', KEYS[1])
  if held + new > most then
    -- Expired entries hold nothing: they make room before the list counts as full.
    local all = redis.call('HGETALL', KEYS[1])
    for i = 1, #all, 2 do
      local expires = tonumber(string.match(all[i + 1], '^[^\n]*\n([^\n]*)'))
      if expires ~= nil and expires <= now then redis.call('HDEL', KEYS[1], all[i]) end
    end
    held = redis.call('HLEN', KEYS[1])
    if held + new > most then return redis.error_reply('SLUICE_LIST_FULL ' .. held) end
  end
  for i = 5, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
  return changed(channel)
end
if op == 'remove' then
  local removed = 0
  for i = 3, #ARGV do removed = removed + redis.call('HDEL', KEYS[1], ARGV[i]) end
  if removed > 0 then changed(ARGV[2]) end
  return removed
end
if op == 'read' then
  local version = tonumber(redis.call('GET', KEYS[2]) or '0')
  if ARGV[2] ~= '' and tonumber(ARGV[2]) == version then return { version } end
  local out = redis.call('HGETALL', KEYS[1])
  table.insert(out, 1, version)
  return out
end
return redis.error_reply('ERR access_list.lua: unknown op ' .. tostring(op))
