-- A key's rate limits inside Redis, so every gateway replica counts against the same
-- budgets and two replicas never admit the same last request: Redis runs a script whole,
-- with nothing in between. The arithmetic is limits.rs's `drained` and `decide`; keep the
-- two the same. Time is Redis's own clock, so replicas' clocks need not agree.
--
-- KEYS[1] requests bucket, KEYS[2] tokens bucket (hashes: level, at), KEYS[3] open
-- requests (a sorted set of lease ids scored by when the lease lapses).
--
-- Every call first settles what the replica kept for it: tokens of earlier answers (negative
-- when a reservation gave back more than its answer used) and the leases of requests that
-- ended while Redis could not be told (ARGV[8] onwards for "admit", ARGV[4] onwards for
-- "settle").
--
-- ARGV[1] = "admit": ARGV[2] requests per minute, ARGV[3] tokens per minute, ARGV[4] max
--   open requests (0: no such limit), ARGV[5] lease id, ARGV[6] lease length in µs,
--   ARGV[7] tokens to settle first.
--   Returns {refused (0 admitted, 1 requests, 2 tokens, 3 open requests), requests level,
--   tokens level, open requests} as strings, the levels before this request.
-- ARGV[1] = "settle": ARGV[2] tokens per minute (0: no such limit), ARGV[3] tokens to settle
--   (reservations made by the replica among them). Returns {tokens level}.

local MINUTE = 60000000
local SLACK = 1e-9
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])

local function level(key, per_minute)
  if per_minute <= 0 then return 0 end
  local stored = redis.call('HMGET', key, 'level', 'at')
  local value, at = tonumber(stored[1]), tonumber(stored[2])
  if not value or not at then return 0 end
  return math.max(0, value - math.max(0, now - at) * per_minute / MINUTE)
end

local function save(key, value, per_minute)
  redis.call('HSET', key, 'level', string.format('%.17g', value), 'at', string.format('%d', now))
  -- Kept until it has drained, and a second more.
  redis.call('PEXPIRE', key, math.floor(value * MINUTE / per_minute / 1000) + 1000)
end

-- Ends the leases from ARGV[first] on.
local function release(first)
  if #ARGV >= first then
    redis.call('ZREM', KEYS[3], unpack(ARGV, first))
  end
end

-- The tokens level once `charged` is settled (never below empty).
local function settled(per_minute, charged)
  local tokens = level(KEYS[2], per_minute)
  if per_minute > 0 and charged ~= 0 then
    tokens = math.max(0, tokens + charged)
    save(KEYS[2], tokens, per_minute)
  end
  return tokens
end

if ARGV[1] == 'settle' then
  release(4)
  local tokens = settled(tonumber(ARGV[2]), tonumber(ARGV[3]))
  return {string.format('%.17g', tokens)}
end

local requests_per_minute, tokens_per_minute = tonumber(ARGV[2]), tonumber(ARGV[3])
local max_open, lease, lease_us = tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[6])
release(8)
local requests = level(KEYS[1], requests_per_minute)
local tokens = settled(tokens_per_minute, tonumber(ARGV[7]))
local open = 0
if max_open > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
  open = redis.call('ZCARD', KEYS[3])
end

local refused = 0
if requests_per_minute > 0 and requests + 1 > requests_per_minute + SLACK then
  refused = 1
elseif tokens_per_minute > 0 and tokens >= tokens_per_minute then
  refused = 2
elseif max_open > 0 and open >= max_open then
  refused = 3
end

if refused == 0 then
  if requests_per_minute > 0 then
    save(KEYS[1], requests + 1, requests_per_minute)
  end
  if max_open > 0 then
    redis.call('ZADD', KEYS[3], now + lease_us, lease)
    redis.call('PEXPIRE', KEYS[3], math.floor(lease_us / 1000) + 1000)
  end
end
return {tostring(refused), string.format('%.17g', requests), string.format('%.17g', tokens), tostring(open)}
