/**
 * True for an error Redis answered about the keys or script of one call (CROSSSLOT, WRONGTYPE, a script
 * or function that failed on one key's value), as opposed to Redis being unreachable, loading, read-only, out of memory
 * or timing out. Such an error says nothing about the other keys: it must never put them in the fail mode.
 * @example
 * if (isKeyScopedError(error)) return decideAlone(request) // Redis is fine; this key is not
 */
export function isKeyScopedError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const message = error.message;
  return (
    /^(CROSSSLOT|WRONGTYPE)\b/.test(message) || /^ERR\b.*(user_script|user_function|Error running script)/.test(message)
  );
}
