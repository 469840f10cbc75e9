-- config_read.lua: reads a limiter's stored configuration (limiter.reconfigure on Redis) and Redis's time, from
-- which a change numbers its version: a version is at least the time it was stored at, so a record stored
-- after the first was lost (a restart without persistence, a FLUSHALL) never reuses a number that named
-- another configuration (one clock for the whole fleet: Redis's).
--
-- KEYS[1]: the configuration record (configKey in key-layout.ts). Reply: { the record, or false when none is
-- stored; Redis's time in whole ms }.

local now = redis.call('TIME')
return { redis.call('GET', KEYS[1]) or false, tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) }
