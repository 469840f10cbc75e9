-- prelude.lua: constants and helpers shared by every algorithm (composed first into the decide script).
-- Mirrors packages/core/src/algorithms/algorithm.ts; keep the arithmetic in the same order.

local EPSILON = 1e-9
local TOLERANCE_MS = 1e-3
local INF = math.huge

-- Whole permits left, never negative, robust to a value a hair under an integer.
local function whole_permits(x)
  if x > 0 then return math.floor(x + EPSILON) end
  return 0
end

local function outcome(allowed, state, remaining, retry_after, reset_after, wait, ttl)
  return { allowed = allowed, state = state, remaining = remaining, retry_after = retry_after,
           reset_after = reset_after, wait = wait, ttl = ttl }
end

-- A request that can never fit: denied with retry_after = Infinity, state untouched.
local function never_fits(state, remaining, reset_after)
  return outcome(false, state, remaining, INF, reset_after, 0, 0)
end

-- Numbers travel as text: '%.17g' round-trips a double exactly; infinities are spelled out.
local function num(x)
  if x == INF then return 'inf' end
  if x == -INF then return '-inf' end
  return string.format('%.17g', x)
end

local function parse_num(s)
  if s == 'inf' then return INF end
  if s == '-inf' then return -INF end
  return tonumber(s)
end

local ALGORITHMS = {}
