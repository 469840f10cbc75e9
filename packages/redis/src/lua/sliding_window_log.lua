-- sliding_window_log.lua: slidingWindowLog(limit, windowMs). Mirrors algorithms/sliding-window-log.ts.
-- p = { limit, windowMs }; state = flat time-ordered { t1, n1, t2, n2, ... } or nil.
ALGORITHMS.slidingWindowLog = function(p, state, now_ms, permits)
  local limit, window_ms = p[1], p[2]
  local entries = state or {}
  local n = #entries
  local now = now_ms
  if n > 0 then now = math.max(now_ms, entries[n - 1]) end
  -- A grant leaves the window at t + windowMs.
  local first = 1
  while first <= n and entries[first] + window_ms <= now do first = first + 2 end
  local used = 0
  for i = first, n, 2 do used = used + entries[i + 1] end
  local reset_after = 0
  if first <= n then reset_after = entries[n - 1] + window_ms - now_ms end

  if permits > limit then return never_fits(state, limit - used, reset_after, reset_after) end
  if used + permits <= limit then
    local live = {}
    for i = first, n do live[#live + 1] = entries[i] end
    local m = #live
    if m > 0 and live[m - 1] == now then
      live[m] = live[m] + permits
    else
      live[m + 1] = now
      live[m + 2] = permits
    end
    local ttl = now + window_ms - now_ms
    return outcome(true, live, limit - used - permits, 0, ttl, 0, ttl)
  end
  -- Oldest grants leave first; the request fits once enough of them have left.
  local excess = used + permits - limit
  local freed = 0
  local i = first
  while freed < excess do
    freed = freed + entries[i + 1]
    i = i + 2
  end
  local retry_after = entries[i - 2] + window_ms - now_ms
  return outcome(false, state, limit - used, retry_after, reset_after, 0, reset_after)
end

-- Refund: take the permits off the grant logged at granted_at (or the first one after it, where a stepped
-- back clock coalesced it into a later entry).
REFUNDS.slidingWindowLog = function(p, state, now, permits, granted_at)
  if state == nil then return state end
  local entries = {}
  local left = permits
  for i = 1, #state, 2 do
    local t, n = state[i], state[i + 1]
    if left > 0 and t >= granted_at then
      local take = math.min(left, n)
      n = n - take
      left = left - take
    end
    if n > 0 then
      entries[#entries + 1] = t
      entries[#entries + 1] = n
    end
  end
  if #entries == 0 then return nil end
  return entries
end
