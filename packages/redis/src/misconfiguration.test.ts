import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { toConnection } from './connection/connect.js';
import { misconfiguration } from './misconfiguration.js';
import { isAclRefusal, isKeyScopedError } from './reply-errors.js';

// A real client that never connects: the classification reads only the error and the client's mode.
const client = new Redis({ lazyConnect: true, port: 1 });
const connection = toConnection(client);
afterAll(() => client.disconnect());

/** The words servers answer an ACL refusal with, exactly as they send them (preflight.lua puts its own in front). */
const REFUSALS = {
  'Redis, a refused command': "NOPERM this user has no permissions to run the 'evalsha' command",
  'Redis, a refused key': 'NOPERM this user has no permissions to access one of the keys used as arguments',
  'Redis 7.0, a command inside a script': "ERR The user executing the script can't run this command or subcommand",
  'Redis 7.0, a key inside a script':
    "ERR The user executing the script can't access at least one of the keys mentioned in the command arguments",
  'Redis 7.0, a channel inside a script':
    "ERR The user executing the script can't publish to the channel mentioned in the command",
  'Valkey 8, a command inside a script':
    "ERR ACL failure in script: User no-set has no permissions to run the 'set' command",
  'Valkey 8, a key inside a script': "ERR ACL failure in script: User u has no permissions to access the 'abc' key",
  'Redis 7.2, a command inside a script (NOPERM)': "NOPERM User no-set has no permissions to run the 'set' command",
};

describe('an ACL refusal is classified by what it says, in every server wording', () => {
  for (const [server, words] of Object.entries(REFUSALS)) {
    it(`${server}: a misconfiguration, through the start-up check's wrapping too`, () => {
      expect(isAclRefusal(words)).toBe(true);
      const direct = misconfiguration(new Error(words), connection);
      expect(direct).toMatch(/lacks a permission the store needs/);
      expect(direct).toContain(words);
      const wrapped = new Error(`ERR sluice preflight: the 'set' command failed: ${words}`);
      expect(misconfiguration(wrapped, connection)).toContain("the 'set' command failed");
    });
  }

  it('what is no refusal passes (the fail mode covers it): unreachable, loading, out of memory, a script error', () => {
    for (const words of [
      'connect ECONNREFUSED 127.0.0.1:6379',
      'LOADING Redis is loading the dataset in memory',
      "OOM command not allowed when used memory > 'maxmemory'.",
      "ERR sluice preflight: the 'set' command failed: OOM command not allowed when used memory > 'maxmemory'.",
      'ERR user_script:1: Script attempted to access nonexistent global variable',
      'the start-up check of limiter "api" timed out after 2000 ms',
    ]) {
      expect(isAclRefusal(words), words).toBe(false);
      expect(misconfiguration(new Error(words), connection), words).toBeUndefined();
    }
  });

  it("an ACL refusal inside a script is never one key's error, in any wording: the same answer on Redis and Valkey", () => {
    // As a decision's script call answers it: the server's words, then the script and line.
    const where = ' script: 2f3a9c7d, on @user_script:12.';
    for (const words of Object.values(REFUSALS))
      expect(isKeyScopedError(new Error(`${words}${where}`)), words).toBe(false);
    // What is one key's error stays so.
    for (const words of [
      'WRONGTYPE Operation against a key holding the wrong kind of value',
      "CROSSSLOT Keys in request don't hash to the same slot",
      `ERR user_script:40: bad argument #1 to 'unpack'${where}`,
    ])
      expect(isKeyScopedError(new Error(words)), words).toBe(true);
  });
});
