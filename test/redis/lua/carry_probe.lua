-- carry_probe.lua (tests only): carry.lua's carry_state and the algorithms' USED for the twin test
-- (test/redis/carry-twin.test.ts), on the state and time the test gives, exactly as sent.
--
-- ARGV[1], ARGV[2]: the rule before and after, one rule each, as ruleArgs writes them
-- ARGV[3]: '<dddd': the rule before's limit and burst, the rule after's limit and burst
-- ARGV[4], ARGV[5]: the rules' stateFormat
-- ARGV[6]: the state as packed doubles ('' = none); ARGV[7]: '<d' now; ARGV[8]: the carry mode
-- Reply: { '<d' what the state counts at now under the rule before, the carried state packed ('' = none) }

local before = parse_rules(1)[1]
local after = parse_rules(2)[1]
local from_limit, from_burst, to_limit, to_burst = struct.unpack('<dddd', ARGV[3])
local from = { kind = before.kind, params = before.params, limit = from_limit, burst = from_burst, format = ARGV[4] }
local to = { kind = after.kind, params = after.params, limit = to_limit, burst = to_burst, format = ARGV[5] }
local state = nil
if ARGV[6] ~= '' then state = unpack_doubles(ARGV[6]) end
local now = struct.unpack('<d', ARGV[7])
local carried = carry_state(from, to, state, now, ARGV[8])
local packed = ''
if carried ~= nil then packed = pack_doubles(carried) end
return { struct.pack('<d', USED[from.kind](from.params, state, now)), packed }
