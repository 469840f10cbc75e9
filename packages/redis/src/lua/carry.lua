-- carry.lua: carryState in core (algorithms/carry.ts): a key's state kept under one set of a rule's
-- parameters, as the state of the same rule with new ones (limiter.reconfigure, overrides). Mirrors
-- carry.ts; keep the arithmetic in the same order. Composed after the prelude and the algorithms' files.
-- A rule here is { kind, params, limit, burst, format }: its kind and wire parameters (as parse_rules reads
-- them) and its Algorithm's limit, burst and stateFormat as the client sends them.

-- The kinds whose state is what was used, kept as it is when it means the same under both rules; their counts
-- are whole grants, rounded up when carried otherwise.
local COUNTS_USED = { fixedWindow = true, calendarWindow = true, slidingWindowCounter = true, slidingWindowLog = true }

-- The state of `to` for a key whose state `state` (nil: none) was kept under `from`, at now_ms, by mode
-- ('used', 'proportional' or 'fresh'); nil: a fresh state.
local function carry_state(from, to, state, now_ms, mode)
  if state == nil or mode == 'fresh' then return nil end
  local kind = to.kind
  if kind == 'smoothBursty' or kind == 'smoothWarmingUp' then
    -- Guava's setRate: the permits stored at now scaled by the new burst over the old, the next free time
    -- kept (or now, when it is past).
    local stored = from.burst - USED[from.kind](from.params, state, now_ms)
    return { (stored * to.burst) / from.burst, math.max(0, state[2] - (now_ms - state[3])), now_ms }
  end
  if mode == 'used' and from.format == to.format and COUNTS_USED[kind] then return state end
  local used = USED[from.kind](from.params, state, now_ms)
  if mode == 'proportional' then used = (used * to.limit) / from.limit end
  if COUNTS_USED[kind] then used = math.ceil(used - EPSILON) end
  if not (used > EPSILON) then return nil end
  return (PENALTIES[kind](to.params, nil, now_ms, used))
end
