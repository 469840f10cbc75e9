-- preflight.lua: a store's start-up check. Runs, once, each command the store's scripts run (ARGV), in a
-- harmless form on keys of the store's own key space, and deletes them: a Redis user that lacks a command or
-- key permission the store needs fails here, before the first decision, with Redis's NOPERM naming it.
--
-- KEYS[1]  a string key, KEYS[2] a sorted-set key, KEYS[3] a hash key: one slot, under the limiter's prefix
-- KEYS[4]  (standalone clients only) a key of another slot: a Cluster node refuses the call (CROSSSLOT or
--          MOVED) where a standalone server runs it, which tells a standalone client given for a Cluster
-- ARGV     the commands to try, lower case (those of redis.call in the store's scripts)
-- Reply: 1, or an error naming the first command that failed, with the server's own words after it (inside
--        a script Redis 7.0 names only the script's line, so each command runs under pcall and the command is
--        named here). Whether the words are an ACL refusal is decided by the client (isAclRefusal): servers
--        word it differently (NOPERM, "can't run this command", Valkey's "ACL failure in script").

local K, Z, H = KEYS[1], KEYS[2], KEYS[3]
local TRY = {
  get = function() return redis.pcall('GET', K) end,
  mget = function() return redis.pcall('MGET', K) end,
  set = function() return redis.pcall('SET', K, '', 'PX', 1000) end,
  -- K may hold set's '' by now: Redis then refuses the value, which says the user may run the command.
  incrby = function()
    local reply = redis.pcall('INCRBY', K, 0)
    if type(reply) == 'table' and reply.err and string.find(reply.err, 'not an integer', 1, true) then return 1 end
    return reply
  end,
  pexpire = function() return redis.pcall('PEXPIRE', K, 1000) end,
  pttl = function() return redis.pcall('PTTL', K) end,
  time = function() return redis.pcall('TIME') end,
  zadd = function() return redis.pcall('ZADD', Z, 0, 'preflight') end,
  zcard = function() return redis.pcall('ZCARD', Z) end,
  zincrby = function() return redis.pcall('ZINCRBY', Z, 0, 'preflight') end,
  zcount = function() return redis.pcall('ZCOUNT', Z, '-inf', '-inf') end,
  zrange = function() return redis.pcall('ZRANGE', Z, 0, 0) end,
  zrangebyscore = function() return redis.pcall('ZRANGEBYSCORE', Z, '-inf', '-inf') end,
  zremrangebyrank = function() return redis.pcall('ZREMRANGEBYRANK', Z, 0, -1000000) end,
  zremrangebyscore = function() return redis.pcall('ZREMRANGEBYSCORE', Z, '-inf', '-inf') end,
  zrem = function() return redis.pcall('ZREM', Z, 'preflight') end,
  zrank = function() return redis.pcall('ZRANK', Z, 'preflight') end,
  zscore = function() return redis.pcall('ZSCORE', Z, 'preflight') end,
  -- A channel under the limiter's prefix (what precedes the key's hash tag), as sluice's own channels are.
  publish = function() return redis.pcall('PUBLISH', string.match(K, '^[^{]*') .. ':sluice-preflight', '') end,
  hset = function() return redis.pcall('HSET', H, 'preflight', '0') end,
  hmget = function() return redis.pcall('HMGET', H, 'preflight') end,
  hget = function() return redis.pcall('HGET', H, 'preflight') end,
  hexists = function() return redis.pcall('HEXISTS', H, 'preflight') end,
  hlen = function() return redis.pcall('HLEN', H) end,
  hgetall = function() return redis.pcall('HGETALL', H) end,
  hdel = function() return redis.pcall('HDEL', H, 'preflight') end,
  del = function() return redis.pcall('DEL', K, Z, H) end,
}
for i = 1, #ARGV do
  local try = TRY[ARGV[i]]
  if try == nil then return redis.error_reply('ERR sluice preflight: no harmless form of ' .. ARGV[i]) end
  local reply = try()
  if type(reply) == 'table' and reply.err then
    redis.pcall('DEL', K, Z, H)
    return redis.error_reply('ERR sluice preflight: the \'' .. ARGV[i] .. '\' command failed: ' .. reply.err)
  end
end
redis.call('DEL', K, Z, H)
return 1
