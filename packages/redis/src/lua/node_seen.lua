-- node_seen.lua: a helper for the fleet heartbeats (presence.lua, membership.lua), composed after the prelude.
-- A fleet is a sorted set of node id -> when the node was last seen, in ms. Node ids are the user's to give
-- (a hostname, say), so two live processes may be given one: each would be counted as the other, and each
-- would hold the share meant for one. A node passes the score its own last heartbeat wrote; a later score
-- under its id means another process wrote there since. That process keeps the id: this call records nothing
-- under it, and the node joins again under an id of its own. (An earlier score is this node's own older
-- write: a failover to a replica that missed the last one.)
--
-- mark_seen(key, node, now, last): `last` is the score this node's last answered heartbeat wrote, as the
-- reply gave it ('' when unknown: its first heartbeat to this fleet, or the last one went unanswered).
-- Returns true when the id is another live process's (nothing written), false when `node` was recorded at `now`.

local function mark_seen(key, node, now, last)
  if last ~= '' then
    local seen = redis.call('ZSCORE', key, node)
    if seen and tonumber(seen) > tonumber(last) then return true end
  end
  redis.call('ZADD', key, now, node)
  return false
end
