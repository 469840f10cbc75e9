/**
 * Where a rule's state lives: `${prefix}:{${identity}}:${rule}`. The braces are a Cluster hash tag, so every
 * rule of one identity lands in one slot and a whole policy is decided in one script call. A prefix holds no
 * '{' and a rule name no ':' (both validated), and the identity is encoded (see encodeIdentity), so two
 * (prefix, key, rule) triples never share a name and no key content can move the hash tag.
 * @example
 * stateKey('api', 'user:1', 'per-minute') // 'api:{user:1}:per-minute'
 */
export function stateKey(prefix: string, key: string, rule: string): string {
  return `${prefix}:{${encodeIdentity(key)}}:${rule}`;
}

/**
 * Where a key's ban lives: beside its rules' states, in the same slot (the same hash tag), under a name no
 * rule can have ('~' is not in a rule name's alphabet).
 * @example
 * banKey('api', 'user:1') // 'api:{user:1}:~ban'
 */
export function banKey(prefix: string, key: string): string {
  return stateKey(prefix, key, '~ban');
}

/**
 * A concurrency limiter's sets for `key`: its holders, its queue and its queue's liveness, in the key's slot.
 * @example
 * const [holders, queue, freed] = semaphoreKeys('jobs', 'tenant:1')
 */
export function semaphoreKeys(prefix: string, key: string): [string, string, string] {
  return [stateKey(prefix, key, '~holders'), stateKey(prefix, key, '~queue'), stateKey(prefix, key, '~queue-alive')];
}

/**
 * Where the nodes of a limiter's fleet are counted (see presence.lua): under the limiter's prefix, with the
 * prefix as its hash tag, so each limiter's count lives in a slot of its own choosing and the limiters of a
 * store spread over a Cluster; '~' keeps it apart from every rule's state.
 * @example
 * fleetKey('api') // 'api:{api}:~nodes'
 */
export function fleetKey(prefix: string): string {
  return stateKey(prefix, prefix, '~nodes');
}

/**
 * The channel on which a concurrency limiter's slots tell waiting processes a slot may be free (the key as message).
 * @example
 * subscriber.subscribe(freedChannel(prefix))
 */
export function freedChannel(prefix: string): string {
  return `${prefix}:sluice-freed`;
}

/** The channel on which `reset(key)` and `unblock(key)` tell every node to drop the key from its deny cache. */
export function resetChannel(prefix: string): string {
  return `${prefix}:sluice-reset`;
}

// Code units that would end or empty the hash tag ('{', '}'), the escape character itself, and lone
// surrogates (UTF-8 has no encoding for them: every client writes U+FFFD, so '\uD800' and '\uDC00' would
// meet in one Redis key while staying two keys in memory).
const NEEDS_ESCAPE = /[%{}]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const ESCAPED = /%(?:7B|7D|25|u[0-9A-F]{4})/g;

function escapeUnit(unit: string): string {
  if (unit === '%') return '%25';
  if (unit === '{') return '%7B';
  if (unit === '}') return '%7D';
  return `%u${unit.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`;
}

function unescapeCode(code: string): string {
  if (code === '%25') return '%';
  if (code === '%7B') return '{';
  if (code === '%7D') return '}';
  return String.fromCharCode(Number.parseInt(code.slice(2), 16));
}

/**
 * A rate-limit key as it sits inside the hash tag: the same string unless it holds `%`, `{`, `}` or a lone
 * surrogate, which are percent-escaped. The encoding is one-to-one (decodeIdentity inverts it), holds no
 * brace, so Redis and the client always agree on the slot, and is valid UTF-8, so distinct keys stay
 * distinct on the wire. A non-empty key encodes to a non-empty tag.
 * @example
 * await connection.publish(resetChannel(prefix), encodeIdentity(key))
 */
export function encodeIdentity(key: string): string {
  // The common key needs nothing: one scan, no allocation.
  NEEDS_ESCAPE.lastIndex = 0;
  if (!NEEDS_ESCAPE.test(key)) return key;
  return key.replace(NEEDS_ESCAPE, escapeUnit);
}

/**
 * The key that encodeIdentity turned into `encoded`.
 * @example
 * decodeIdentity(message) // the key a reset message names
 */
export function decodeIdentity(encoded: string): string {
  return encoded.includes('%') ? encoded.replace(ESCAPED, unescapeCode) : encoded;
}
