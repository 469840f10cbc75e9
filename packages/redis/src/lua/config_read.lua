-- config_read.lua: reads a limiter's stored configuration (limiter.reconfigure on Redis).
--
-- KEYS[1]: the configuration record (configKey in key-layout.ts). Reply: the record, or nil when the limiter's
-- configuration was never changed.

return redis.call('GET', KEYS[1])
