-- block.lua: limiter.block(key, ms): bans a key until now + ms, keeping a ban in force that ends later (as
-- longerBan in core), which then counts as an explicit block (as the memory store's block). A ban is the
-- state { until, rule } decide.lua reads; rule -1 marks an explicit block.
--
-- KEYS[1]  the key's ban (banKey in key-layout.ts); KEYS[2] the ban marker of its slot (banMarkerKey)
-- ARGV     ms; now ('' = this server's TIME)
-- Reply: 1 when the ban was set, 0 when a longer explicit one was kept.

local now = time_arg(ARGV[2])
local ban_until = now + tonumber(ARGV[1])
local raw = redis.call('GET', KEYS[1])
if raw then
  local ban = unpack_doubles(raw)
  -- A rule's longer ban becomes the operator's (to its own end): an explicit ban outranks the allow list.
  if ban[1] >= ban_until then
    if ban[2] == -1 then return 0 end
    ban_until = ban[1]
  end
end
redis.call('SET', KEYS[1], pack_doubles({ ban_until, -1 }), 'PX', reclaim_px(ban_until - now))
raise_marker(KEYS[2], marker_until(redis.call('GET', KEYS[2])), ban_until, now)
return 1
