-- pause.lua: a throttle's pauses (outgoing calls): no call of a key starts while its own pause, or the
-- throttle-wide one, lasts; a pause one node sets holds every node. A pause only ever extends. Each pause
-- is a key that expires when the pause ends: there is nothing to clean up.
--
-- KEYS[1]  the throttle-wide pause; KEYS[2] the key's pause (both under the throttle's hash tag: one slot;
--          for a throttle-wide pause, KEYS[2] is KEYS[1] again)
-- ARGV     op ('pause' | 'read'); then
--          pause: which pause (1: the throttle-wide, 2: the key's), ms (an integer >= 1), the channel that
--          tells the other nodes, the message;
--          read: nothing.
-- Reply    pause: the pause now in force, ms; read: the longer of the two pauses' rest, ms (0: none).

local op = ARGV[1]
if op == 'pause' then
  local target = KEYS[tonumber(ARGV[2])]
  local ms = tonumber(ARGV[3])
  local left = redis.call('PTTL', target)
  if left < ms then
    redis.call('SET', target, '1', 'PX', ms)
    left = ms
  end
  redis.call('PUBLISH', ARGV[4], ARGV[5])
  return left
elseif op == 'read' then
  return math.max(redis.call('PTTL', KEYS[1]), redis.call('PTTL', KEYS[2]), 0)
end
return redis.error_reply('ERR sluice pause: unknown op ' .. tostring(op))
