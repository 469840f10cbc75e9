-- raise_version.lua: raises one slot's configuration version (versionKey in key-layout.ts) to a limiter's new
-- version, never lowering it (two changes raising at once leave the later one). reconfigure raises every
-- slot's before it resolves, so that every node's next decision anywhere learns of the change.
--
-- KEYS[1]: the slot's configuration version key. ARGV[1]: the new version.
-- Reply: the version in force there.

local stored = tonumber(redis.call('GET', KEYS[1])) or 1
local version = tonumber(ARGV[1])
if stored >= version then return stored end
redis.call('SET', KEYS[1], string.format('%d', version))
return version
