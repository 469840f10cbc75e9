import { afterEach, describe, expect, it, vi } from 'vitest';
import { SluiceRangeError, SluiceTypeError } from './errors.js';
import { WARNINGS, silenceWarnings, warnOnce } from './warnings.js';

const emitted = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
afterEach(() => emitted.mockClear());
const codes = () => emitted.mock.calls.map((call) => (call[1] as { code: string }).code);

describe('coded warnings', () => {
  it('are said once per code, as SluiceWarning, with the code and what to do', () => {
    warnOnce('SLUICE_CROSS_SLOT', 'limiter "a" spans slots.');
    warnOnce('SLUICE_CROSS_SLOT', 'limiter "b" spans slots.');
    warnOnce('SLUICE_OFFLINE_QUEUE', 'this client queues forever.');
    expect(codes()).toEqual(['SLUICE_CROSS_SLOT', 'SLUICE_OFFLINE_QUEUE']);
    const [message, options] = emitted.mock.calls[0] as [string, { type: string }];
    expect(options.type).toBe('SluiceWarning');
    expect(message).toContain('limiter "a" spans slots.');
    expect(message).toContain(WARNINGS.SLUICE_CROSS_SLOT);
    expect(message).toContain("silenceWarnings('SLUICE_CROSS_SLOT')");
  });

  it('a message without a full stop never runs on into the advice', () => {
    warnOnce('SLUICE_STORE_MISCONFIGURED', 'the README gives the ACL line with every channel it uses');
    const [message] = emitted.mock.calls[0] as [string];
    expect(message).toContain(`every channel it uses. ${WARNINGS.SLUICE_STORE_MISCONFIGURED}`);
  });

  it('every code says what to do in a sentence', () => {
    for (const [code, advice] of Object.entries(WARNINGS)) {
      expect(code).toMatch(/^SLUICE_[A-Z_]+$/);
      expect(advice).toMatch(/^[A-Z].*\.$/);
    }
  });

  it('silenceWarnings silences the codes named, or all; unknown codes are typed errors naming them', () => {
    silenceWarnings('SLUICE_ACCOUNTING_FAILED');
    warnOnce('SLUICE_ACCOUNTING_FAILED', 'a refund failed.');
    warnOnce('SLUICE_CALLBACK_ERROR', 'a callback threw.');
    expect(codes()).toEqual(['SLUICE_CALLBACK_ERROR']);
    expect(() => silenceWarnings('SLUICE_NOPE' as never)).toThrow(SluiceRangeError);
    expect(() => silenceWarnings('SLUICE_NOPE' as never)).toThrow(
      /"SLUICE_NOPE" is not a sluice warning code; known codes: SLUICE_CALLBACK_ERROR/,
    );
    expect(() => silenceWarnings(42 as never)).toThrow(SluiceTypeError);
    silenceWarnings();
    warnOnce('SLUICE_STORE_MISCONFIGURED', 'no EVALSHA.');
    expect(codes()).toEqual(['SLUICE_CALLBACK_ERROR']);
  });
});

describe('SLUICE_SILENCE_WARNINGS', () => {
  it('silences the listed codes in a fresh process', async () => {
    const { spawnSync } = await import('node:child_process');
    const program = `
      const { warnOnce } = await import(${JSON.stringify(new URL('./warnings.ts', import.meta.url).href)});
      process.on('warning', (w) => console.log(w.code));
      warnOnce('SLUICE_CROSS_SLOT', 'x.'); warnOnce('SLUICE_OFFLINE_QUEUE', 'y.');
      await new Promise((r) => setImmediate(r));`;
    const run = (value: string) =>
      spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', program], {
        env: { ...process.env, SLUICE_SILENCE_WARNINGS: value },
        encoding: 'utf8',
      });
    expect(run('SLUICE_CROSS_SLOT').stdout.trim().split('\n')).toEqual(['SLUICE_OFFLINE_QUEUE']);
    expect(run('all').stdout.trim()).toBe('');
    expect(run('').stdout.trim().split('\n')).toEqual(['SLUICE_CROSS_SLOT', 'SLUICE_OFFLINE_QUEUE']);
  });
});
