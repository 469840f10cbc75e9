-- semaphore.lua: the slots of a concurrencyLimiter for one key, shared by every process. Holders are a
-- sorted set scored by when their lease runs out: a holder that stops renewing (a crashed or paused process)
-- holds nothing past it. Callers that wait keep their place in a queue scored by arrival, first come first
-- served across processes; a waiter that stops renewing its place loses it the same way. Composed after the
-- prelude (time_arg, reclaim_px).
--
-- KEYS[1]  holders: ticket -> lease end (ms)
-- KEYS[2]  queue: ticket -> place: -priority * 2^40 + arrival number (higher priorities first, then first come)
-- KEYS[3]  queue liveness: ticket -> place's lease end (ms)
-- KEYS[4]  the arrival counter (INCR)                                    (all four under the key's hash tag)
-- ARGV     op ('acquire' | 'release' | 'leave' | 'renew' | 'reconcile'); now ('' = this server's TIME); max;
--          leaseMs; the channel that tells waiting processes a slot may be free; the key as published on it;
--          then
--          acquire: ticket, '1' to queue when no slot is free ('0': a try), the caller's priority (an integer
--          from -1000 to 1000, or half a step above one for a caller back for another slot: ahead of every
--          waiter of the integer below it; '' = 0): it is placed behind every waiter of its priority or higher;
--          release, leave: ticket;
--          renew: the number of held tickets, the held tickets, then the queued tickets;
--          reconcile (a process whose Redis came back): the number of tickets to adopt (slots its fail mode
--          granted, still held: they become holders whatever max says, they are inside), those tickets, then
--          the tickets to drop (calls that got no answer and may have landed late: never phantom holders).
-- Reply    acquire: { 1 } granted, or { 0, ms until a slot may free itself (a lease running out; -1: only a
--          release frees one) }; release, leave: 1 if the ticket held a slot or a place, else 0;
--          renew: the held tickets whose lease had run out (lost: another caller may have the slot);
--          reconcile: how many dropped tickets held a slot.

local H, Q, A, S = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local op = ARGV[1]
local now = time_arg(ARGV[2])
local max = tonumber(ARGV[3])
local lease = tonumber(ARGV[4])
local channel, published = ARGV[5], ARGV[6]

-- Holders and waiters past their lease hold nothing.
local function expire()
  redis.call('ZREMRANGEBYSCORE', H, '-inf', now)
  local dead = redis.call('ZRANGEBYSCORE', A, '-inf', now, 'LIMIT', 0, 500)
  for i = 1, #dead do
    redis.call('ZREM', Q, dead[i])
    redis.call('ZREM', A, dead[i])
  end
end

-- Idle keys vanish: the sets live until the latest lease in them runs out (plus a second). Never the
-- caller's own lease alone: a process with a shorter leaseMs (a rolling deploy) must not expire a set that
-- still holds another's live slot.
local function keep()
  local last = now + lease
  for _, set in ipairs({ H, A }) do
    local tail = redis.call('ZRANGE', set, -1, -1, 'WITHSCORES')
    if tail[2] then last = math.max(last, tonumber(tail[2])) end
  end
  local px = reclaim_px(last - now)
  redis.call('PEXPIRE', H, px)
  redis.call('PEXPIRE', Q, px)
  redis.call('PEXPIRE', A, px)
  redis.call('PEXPIRE', S, px)
end

-- Waiting processes are told only when someone waits.
local function notify()
  if redis.call('ZCARD', Q) > 0 then redis.call('PUBLISH', channel, published) end
end

-- The first lease to run out (a holder's, or a waiter's place): a slot may come free then unannounced.
local function next_expiry()
  local first = -1
  for _, set in ipairs({ H, A }) do
    local head = redis.call('ZRANGE', set, 0, 0, 'WITHSCORES')
    if head[2] then
      local at = tonumber(head[2]) - now
      if first == -1 or at < first then first = at end
    end
  end
  if first == -1 then return -1 end
  return math.ceil(math.max(first, 0))
end

if op == 'acquire' then
  expire()
  local ticket = ARGV[7]
  local priority = tonumber(ARGV[9]) or 0
  local rank = redis.call('ZRANK', Q, ticket)
  local ahead = rank
  -- A newcomer counts the waiters of its priority or higher: they came first, or matter more. Half a step
  -- above an integer's places (arrival numbers stay below 2^39) and below the next one's: a priority of
  -- p + 0.5 counts those of p + 1 and up, never those of p. (Scores as '%.0f': Lua would write a number this
  -- large in 14 digits.)
  if not ahead then
    ahead = redis.call('ZCOUNT', Q, '-inf', string.format('(%.0f', (-priority + 0.5) * 1099511627776))
  end
  if ahead < max - redis.call('ZCARD', H) then
    if rank then
      redis.call('ZREM', Q, ticket)
      redis.call('ZREM', A, ticket)
    end
    redis.call('ZADD', H, now + lease, ticket)
    keep()
    return { 1 }
  end
  if ARGV[8] == '1' then
    if not rank then
      local place = -priority * 1099511627776 + redis.call('INCRBY', S, 1)
      redis.call('ZADD', Q, string.format('%.0f', place), ticket)
    end
    redis.call('ZADD', A, now + lease, ticket)
    keep()
  end
  return { 0, next_expiry() }
elseif op == 'release' then
  local removed = redis.call('ZREM', H, ARGV[7])
  if removed == 1 then notify() end
  return removed
elseif op == 'leave' then
  local removed = redis.call('ZREM', Q, ARGV[7])
  redis.call('ZREM', A, ARGV[7])
  if removed == 1 then notify() end
  return removed
elseif op == 'renew' then
  local held = tonumber(ARGV[7])
  local lost = {}
  for i = 8, 7 + held do
    if redis.call('ZSCORE', H, ARGV[i]) then
      redis.call('ZADD', H, 'XX', now + lease, ARGV[i])
    else
      lost[#lost + 1] = ARGV[i]
    end
  end
  for i = 8 + held, #ARGV do
    if redis.call('ZSCORE', Q, ARGV[i]) then redis.call('ZADD', A, now + lease, ARGV[i]) end
  end
  keep()
  return lost
elseif op == 'reconcile' then
  expire()
  local adopt = tonumber(ARGV[7])
  for i = 8, 7 + adopt do
    redis.call('ZREM', Q, ARGV[i])
    redis.call('ZREM', A, ARGV[i])
    redis.call('ZADD', H, now + lease, ARGV[i])
  end
  local freed = 0
  for i = 8 + adopt, #ARGV do
    freed = freed + redis.call('ZREM', H, ARGV[i])
    redis.call('ZREM', Q, ARGV[i])
    redis.call('ZREM', A, ARGV[i])
  end
  if adopt > 0 then keep() end
  if freed > 0 then notify() end
  return freed
end
return redis.error_reply('ERR sluice semaphore: unknown op ' .. tostring(op))
