/** The README's ACL lines for a sluice Redis user, as the suites that run under them use them. */

/** What the README adds to the ACL line to let sluice load its scripts as functions and call them. */
export const SLUICE_FUNCTIONS_ACL = ['+fcall', '+function|load'];

/**
 * The ACL line the README gives for a sluice user on prefix `sluice`: its keys, its reset channel, and the
 * commands the stores and their scripts run (PING, INFO and CLIENT for the clients' own handshakes).
 */
export const SLUICE_ACL = [
  'on',
  '~sluice{*',
  '&sluice:*',
  '-@all',
  '+evalsha',
  '+eval',
  '+exists',
  '+del',
  '+publish',
  '+subscribe',
  '+unsubscribe',
  '+get',
  '+mget',
  '+set',
  '+incrby',
  '+pexpire',
  '+pttl',
  '+time',
  '+hget',
  '+hmget',
  '+hset',
  '+hdel',
  '+hexists',
  '+hlen',
  '+hgetall',
  '+zadd',
  '+zcard',
  '+zcount',
  '+zincrby',
  '+zrange',
  '+zrangebyscore',
  '+zrem',
  '+zremrangebyrank',
  '+zremrangebyscore',
  '+zrank',
  '+zscore',
  '+ping',
  '+info',
  '+hello',
];

/** What the README adds to the ACL line for GLIDE, which loads a script its EVALSHA did not find by SCRIPT LOAD. */
export const SLUICE_GLIDE_ACL = ['+script|load'];

/** The README's ACL line less `permissions`: a user missing exactly those, for the tests of what it is told. */
export function aclWithout(...permissions: string[]): string[] {
  return SLUICE_ACL.filter((p) => !permissions.includes(p));
}
