import { describe, expect, it } from 'vitest';
import { EXIT, runCli } from './cli.js';
import { printable } from './printable.js';

async function cli(...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { out: (l) => out.push(l), err: (l) => err.push(l), env: {} });
  return { code, out, err };
}

describe('printable', () => {
  it('escapes what a terminal would act on, and only that', () => {
    expect(printable('user:1 ümlaut 日本')).toBe('user:1 ümlaut 日本');
    expect(printable('a\u001b[31mred\u0007\r\n\t\u007f')).toBe('a\\x1b[31mred\\x07\\x0d\\x0a\\x09\\x7f');
    expect(printable('\u009b2J \u2028 \u202e')).toBe('\\u{9b}2J \\u{2028} \\u{202e}');
    expect(printable('back\\slash')).toBe('back\\\\slash');
  });
});

describe('the sluice command line', () => {
  it('usage errors are one line each and exit 2, before any connection', async () => {
    expect(await cli()).toMatchObject({ code: EXIT.usage });
    expect(await cli('--help')).toMatchObject({ code: EXIT.ok });
    expect(await cli('frob', '--prefix', 'p')).toMatchObject({
      code: EXIT.usage,
      err: [
        'sluice: unknown command "frob"; commands: inspect, reset, block, unblock, top, allow, deny, unlist, lists',
      ],
    });
    expect(await cli('inspect', 'k')).toMatchObject({
      code: EXIT.usage,
      err: ['sluice: --prefix is required (the prefix the limiters were created with), or set SLUICE_PREFIX'],
    });
    expect(await cli('inspect', 'k', '--prefix', 'p', '--url', 'http://x')).toMatchObject({
      code: EXIT.usage,
      err: ['sluice: --url must be a redis:// or rediss:// URL, got "http://x"'],
    });
    const unknown = await cli('inspect', '--prefx', 'p');
    expect(unknown.code).toBe(EXIT.usage);
    expect(unknown.err[0]).toMatch(
      /^sluice: the flags have no option "prefx" \(got true\); the options are url, cluster, prefix,/,
    );
  });

  it('an unreachable Redis is one line and exit 1 (no retry loop)', async () => {
    const result = await cli('lists', '--prefix', 'p', '--url', 'redis://127.0.0.1:1');
    expect(result.code).toBe(EXIT.failed);
    expect(result.err).toEqual(['sluice: cannot reach Redis at redis://127.0.0.1:1: connect ECONNREFUSED 127.0.0.1:1']);
  });
});
