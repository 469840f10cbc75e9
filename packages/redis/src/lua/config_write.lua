-- config_write.lua: stores a limiter's new configuration (limiter.reconfigure on Redis) if it is still the
-- one the caller changed: a compare-and-set on the version, so two nodes changing it at once end in one of
-- the two, never a mix.
--
-- KEYS[1]: the configuration record (configKey in key-layout.ts): '<version>\n<the configuration's JSON>'.
-- ARGV[1]: the version the caller changed (1: none stored yet); ARGV[2]: the new record.
-- Reply: 'OK'. Errors: SLUICE_CONFLICT <version> when the version stored is not ARGV[1] (nothing written).

local raw = redis.call('GET', KEYS[1])
local stored = 1
if raw then stored = tonumber(string.match(raw, '^(%d+)')) or 1 end
if stored ~= tonumber(ARGV[1]) then return redis.error_reply('SLUICE_CONFLICT ' .. string.format('%d', stored)) end
redis.call('SET', KEYS[1], ARGV[2])
return 'OK'
