-- limited_keys.lua: a limiter's limited-keys board (limiter.topLimited): every node adds the keys it denied
-- and granted near their limit since its last flush to the counts of the minute it flushes in; a reader
-- sums the minutes it asks for. Each minute keeps the `keep` keys highest in each count and expires.
--
-- KEYS     add: one minute's sorted sets, denials, near-limit grants and overcounts (KEYS[1..3]);
--          read: those of each minute read, three per minute. All under the limiter's hash tag: one slot.
-- ARGV     op ('add' | 'read'); then
--          add: keep (an integer >= 1), ttl ms, then per key: the key, its denials, near-limit grants and
--          overcount (numbers >= 0);
--          read: nothing.
-- Reply    add: the number of keys added; read: per KEYS entry, its members and scores (ZRANGE WITHSCORES).

local op = ARGV[1]
if op == 'add' then
  local keep = tonumber(ARGV[2])
  local ttl = tonumber(ARGV[3])
  local added = 0
  for i = 4, #ARGV, 4 do
    local key = ARGV[i]
    for j = 1, 3 do
      local count = tonumber(ARGV[i + j])
      if count > 0 then redis.call('ZINCRBY', KEYS[j], count, key) end
    end
    added = added + 1
  end
  for j = 1, 3 do
    -- The lowest go: ranks rise with the score (then the member), so the last `keep` ranks stay.
    if redis.call('ZCARD', KEYS[j]) > keep then redis.call('ZREMRANGEBYRANK', KEYS[j], 0, -keep - 1) end
    redis.call('PEXPIRE', KEYS[j], ttl)
  end
  return added
end
if op == 'read' then
  local out = {}
  for j = 1, #KEYS do out[j] = redis.call('ZRANGE', KEYS[j], 0, -1, 'WITHSCORES') end
  return out
end
return redis.error_reply('ERR limited_keys.lua: unknown op ' .. tostring(op))
