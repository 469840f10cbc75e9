import { afterEach, describe, expect, it, vi } from 'vitest';
import { decideOneScript } from '../scripts.js';
import { FunctionLibraries, RELOAD_AFTER_MS, type ScriptCalls } from './function-libraries.js';

// The paths a real server cannot show here (it is Redis 7): a server without FUNCTION, a load lost to a
// dropped connection. The others (load, FCALL, Function not found, NOPERM) run on real servers in
// test/redis/store.test.ts, test/clients/clients.test.ts and test/clients/production.test.ts.

const script = decideOneScript('fixedWindow');

/** An adapter whose server answers as `server` says, recording what was sent. */
function adapter(server: { load: () => Promise<unknown>; fcall?: () => Promise<unknown> }) {
  const sent: string[] = [];
  const calls: ScriptCalls = {
    fcall: async () => {
      sent.push('fcall');
      return (server.fcall ?? (async () => Buffer.from('f')))();
    },
    load: async () => {
      sent.push('load');
      return server.load();
    },
    bySha: async () => {
      sent.push('sha');
      return Buffer.from('s');
    },
  };
  return { calls, sent };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

afterEach(() => {
  vi.useRealTimers();
});

describe('FunctionLibraries', () => {
  it('runs by sha1 until the library is loaded, then by FCALL', async () => {
    const libraries = new FunctionLibraries();
    const { calls, sent } = adapter({ load: async () => 'ok' });
    await libraries.run(calls, script, [], []);
    await settle();
    await libraries.run(calls, script, [], []);
    expect(sent).toEqual(['load', 'sha', 'fcall']);
  });

  it('a server without FUNCTION (before Redis 7) runs every script by sha1, and is asked once', async () => {
    const libraries = new FunctionLibraries();
    const { calls, sent } = adapter({
      load: async () => {
        throw new Error("ERR unknown command 'FUNCTION', with args beginning with: 'LOAD' 'REPLACE'");
      },
    });
    for (let i = 0; i < 3; i++) {
      await libraries.run(calls, script, [], []);
      await settle();
    }
    expect(sent).toEqual(['load', 'sha', 'sha', 'sha']);
    expect(libraries.available).toBe(false);
  });

  it('a load lost to the connection is tried again after RELOAD_AFTER_MS, running by sha1 meanwhile', async () => {
    vi.useFakeTimers({ toFake: ['performance'] });
    const libraries = new FunctionLibraries();
    let attempts = 0;
    const { calls, sent } = adapter({
      load: async () => {
        if (++attempts === 1) throw new Error('Connection is closed.');
        return 'ok';
      },
    });
    await libraries.run(calls, script, [], []);
    await settle();
    await libraries.run(calls, script, [], []);
    vi.advanceTimersByTime(RELOAD_AFTER_MS);
    await libraries.run(calls, script, [], []);
    await settle();
    await libraries.run(calls, script, [], []);
    expect(sent).toEqual(['load', 'sha', 'sha', 'load', 'sha', 'fcall']);
    expect(libraries.available).toBe(true);
  });

  it('an error of the call itself is the caller’s, not a reason to leave functions', async () => {
    const libraries = new FunctionLibraries();
    const { calls } = adapter({
      load: async () => 'ok',
      fcall: async () => {
        throw new Error('WRONGTYPE Operation against a key holding the wrong kind of value');
      },
    });
    await libraries.run(calls, script, [], []);
    await settle();
    await expect(libraries.run(calls, script, [], [])).rejects.toThrow(/WRONGTYPE/);
    expect(libraries.available).toBe(true);
  });

  it('one load at a time per library, however many calls wait for it', async () => {
    const libraries = new FunctionLibraries();
    let finish: (value: unknown) => void = () => {};
    const { calls, sent } = adapter({ load: () => new Promise((resolve) => (finish = resolve)) });
    await Promise.all(Array.from({ length: 5 }, () => libraries.run(calls, script, [], [])));
    finish('ok');
    await settle();
    await libraries.run(calls, script, [], []);
    expect(sent.filter((s) => s === 'load')).toHaveLength(1);
    expect(sent.at(-1)).toBe('fcall');
  });
});
