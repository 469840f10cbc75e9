/**
 * Where a rule's state lives: `${prefix}:{${key}}:${rule}`. The braces are a Cluster hash tag, so every rule
 * of one identity lands in one slot and a whole policy is decided in one script call. A prefix holds no
 * '{' and a rule name no ':' (both validated), so two (prefix, key, rule) triples never share a name.
 */
export function stateKey(prefix: string, key: string, rule: string): string {
  return `${prefix}:{${key}}:${rule}`;
}

/** The channel on which `reset(key)` tells every node to drop the key from its deny cache. */
export function resetChannel(prefix: string): string {
  return `${prefix}:sluice-reset`;
}
