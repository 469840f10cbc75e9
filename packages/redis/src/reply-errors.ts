/**
 * True for an error Redis answered about the keys or script of one call (CROSSSLOT, WRONGTYPE, a script
 * or function that failed on one key's value), as opposed to Redis being unreachable, loading, read-only, out of memory
 * or timing out. Such an error says nothing about the other keys: it must never put them in the fail mode.
 * An ACL refusal inside a script is none (see isAclRefusal): it refuses every key alike, whichever words the
 * server puts it in (Redis 7.0 and Valkey wrap it in an ERR naming the script, later Redis answers NOPERM).
 * @example
 * if (isKeyScopedError(error)) return decideAlone(request) // Redis is fine; this key is not
 */
export function isKeyScopedError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const message = error.message;
  if (isAclRefusal(message)) return false;
  return (
    /^(CROSSSLOT|WRONGTYPE)\b/.test(message) || /^ERR\b.*(user_script|user_function|Error running script)/.test(message)
  );
}

/**
 * True when `message` is a server's ACL refusal, in any wording: the NOPERM a refused command gets; inside a
 * script, Redis 7.0's "The user executing the script can't run this command" (or "can't access ... keys",
 * "can't publish ... channel"), and later Redis's and Valkey's "ACL failure in script: User u has no
 * permissions to run the 'set' command". Classified by what it says, not by the code in front of it: the
 * same refusal is NOPERM on one server and ERR on another.
 * @example
 * isAclRefusal("ERR ACL failure in script: User u has no permissions to run the 'set' command") // true
 */
export function isAclRefusal(message: string): boolean {
  return ACL_REFUSAL.test(message);
}

const ACL_REFUSAL =
  /\bNOPERM\b|\bACL failure\b|\bno permissions? to (run|access|publish)\b|user executing the script can't (run|access|publish)\b/i;

/**
 * The configuration version a script's SLUICE_STALE (or SLUICE_CONFLICT) error names: the slot's
 * configuration is newer than the caller's (another node changed it first), nothing was decided or written.
 * Undefined for any other error. Every client hands the error's text on as its message, some after a prefix.
 * @example
 * const newer = versionError(error, 'SLUICE_STALE') // a number: read the new configuration and ask again
 */
export function versionError(error: unknown, code: 'SLUICE_STALE' | 'SLUICE_CONFLICT'): number | undefined {
  if (!(error instanceof Error)) return undefined;
  const at = error.message.indexOf(code);
  if (at === -1) return undefined;
  const version = Number.parseInt(error.message.slice(at + code.length + 1), 10);
  return Number.isSafeInteger(version) ? version : undefined;
}
