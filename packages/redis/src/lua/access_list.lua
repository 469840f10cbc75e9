-- access_list.lua: a limiter's allow and deny lists (limiter.allow, limiter.deny, the admin router, the CLI):
-- one hash of entries, a version every change replaces, and a message on the limiter's list channel so every
-- node reads the list again at once (each also checks the version now and then: a missed message heals).
-- An entry's value is '<list>\n<expires at, ms since the epoch on Redis TIME, or ''>\n<reason>'.
--
-- Expiry is Redis's: a writer sends a time to live and this script sets the expiry from TIME, so a writer
-- whose clock is off (a CLI on a laptop) writes the same entry as any other; a read answers TIME with the
-- entries, for readers to count down on their own clocks.
--
-- The version is a random id the writer draws for each change, never a count: after Redis loses the lists,
-- or only their last changes (a restart without persistence, FLUSHALL, a failover to a replica that lagged),
-- the next change never names contents a node already holds (a counter would start again where a node had
-- been, and that node would keep its stale list for good). No version stored: a read carries the entries.
--
-- KEYS[1]  the entries (a hash: entry text -> value); KEYS[2] the version (both under the limiter's hash tag)
-- ARGV     op ('put' | 'remove' | 'read'); then
--          put: the new version, the most entries the hash may hold, the channel, then per entry its
--               text, its list, its time to live in ms ('' none) and its reason;
--          remove: the new version, the channel, then the texts;
--          read: the version the reader knows ('' none).
-- Reply    put: the version; remove: how many entries there were; read: { version, now } when the
--          version is the one the reader knows, else { version, now, text, value, text, value, ... }
--          (version '' when none is stored; now in ms on TIME).
-- Errors   SLUICE_LIST_FULL <entries held>: the put would take the hash past its most (nothing was added).

local op = ARGV[1]

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

-- Stores the change's version and tells every node.
local function changed(version, channel)
  redis.call('SET', KEYS[2], version)
  redis.call('PUBLISH', channel, version)
  return version
end

if op == 'put' then
  local version, most, channel = ARGV[2], tonumber(ARGV[3]), ARGV[4]
  local new = 0
  for i = 5, #ARGV, 4 do
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
  for i = 5, #ARGV, 4 do
    local ttl = tonumber(ARGV[i + 2])
    local expires = ttl == nil and '' or string.format('%d', now + ttl)
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1] .. '\n' .. expires .. '\n' .. ARGV[i + 3])
  end
  return changed(version, channel)
end
if op == 'remove' then
  local removed = 0
  for i = 4, #ARGV do removed = removed + redis.call('HDEL', KEYS[1], ARGV[i]) end
  if removed > 0 then changed(ARGV[2], ARGV[3]) end
  return removed
end
if op == 'read' then
  local version = redis.call('GET', KEYS[2]) or ''
  if version ~= '' and ARGV[2] == version then return { version, now } end
  local out = redis.call('HGETALL', KEYS[1])
  table.insert(out, 1, now)
  table.insert(out, 1, version)
  return out
end
return redis.error_reply('ERR access_list.lua: unknown op ' .. tostring(op))
