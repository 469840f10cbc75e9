/**
 * Where two answers differ, bit for bit: every field of every object and array, numbers equal as doubles
 * (NaN equals NaN), a field absent equal to one that is undefined.
 */
export function firstDifference(
  expected: unknown,
  actual: unknown,
  path = '',
): { path: string; expected: unknown; actual: unknown } | undefined {
  if (typeof expected === 'number' && typeof actual === 'number') {
    return expected === actual || (Number.isNaN(expected) && Number.isNaN(actual))
      ? undefined
      : { path, expected, actual };
  }
  if (typeof expected !== 'object' || expected === null || typeof actual !== 'object' || actual === null)
    return expected === actual ? undefined : { path, expected, actual };
  if (Array.isArray(expected) !== Array.isArray(actual)) return { path, expected, actual };
  if (Array.isArray(expected) && Array.isArray(actual)) {
    if (expected.length !== actual.length)
      return { path: `${path}.length`, expected: expected.length, actual: actual.length };
    for (let i = 0; i < expected.length; i++) {
      const d = firstDifference(expected[i], actual[i], `${path}[${i}]`);
      if (d !== undefined) return d;
    }
    return undefined;
  }
  const e = expected as Record<string, unknown>;
  const a = actual as Record<string, unknown>;
  const names = new Set([...Object.keys(e), ...Object.keys(a)]);
  for (const name of [...names].sort()) {
    const d = firstDifference(e[name], a[name], path === '' ? name : `${path}.${name}`);
    if (d !== undefined) return d;
  }
  return undefined;
}
