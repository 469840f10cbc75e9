-- descriptor.lua: what a limiter on this Redis says it runs (its mode and rules as data), for tools that read
-- its state without running it (the sluice CLI). Informational: decisions never read it. Each node writes it
-- as it binds (the last writer's stands) and it expires a week after the last.
--
-- KEYS[1]  the descriptor (under the limiter's hash tag)
-- ARGV     op ('write' | 'read'); write: the descriptor (JSON), its time to live in ms
-- Reply    write: 1; read: the descriptor, or nil when no limiter of the prefix wrote one

if ARGV[1] == 'write' then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', tonumber(ARGV[3]))
  return 1
end
if ARGV[1] == 'read' then return redis.call('GET', KEYS[1]) end
return redis.error_reply('ERR descriptor.lua: unknown op ' .. tostring(ARGV[1]))
