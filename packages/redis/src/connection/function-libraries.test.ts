import { afterEach, describe, expect, it, vi } from 'vitest';
import { decideOneScript } from '../scripts.js';
import { FunctionLibraries, RELOAD_AFTER_MS, type ScriptCalls } from './function-libraries.js';

// The paths a real server cannot show here (it is Redis 7): a server without FUNCTION, a load lost to a
// dropped connection, a load that never answers. The others (load, FCALL, Function not found, NOPERM, the
// order calls reach the server in) run on real servers in test/redis/store.test.ts,
// test/redis/script-order.test.ts, test/clients/clients.test.ts and test/clients/production.test.ts.

const script = decideOneScript('fixedWindow');
const other = decideOneScript('tokenBucket');

/** An adapter whose server answers as `server` says, recording what was sent, in order. */
function adapter(server: { load: () => Promise<unknown>; fcall?: () => Promise<unknown> }) {
  const sent: string[] = [];
  const name = (functionName: string) => (functionName === script.functionName ? 'script' : 'other');
  const calls: ScriptCalls = {
    fcall: async (functionName) => {
      sent.push(`fcall ${name(functionName)}`);
      return (server.fcall ?? (async () => Buffer.from('f')))();
    },
    load: async (library) => {
      sent.push(`load ${library === script.library ? 'script' : 'other'}`);
      return server.load();
    },
    bySource: async (s) => {
      sent.push(`eval ${name(s.functionName)}`);
      return Buffer.from('e');
    },
    bySha: async (s) => {
      sent.push(`sha ${name(s.functionName)}`);
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
  it("sends a script's source first, by sha1 after, while its library loads; by FCALL once it is loaded", async () => {
    const libraries = new FunctionLibraries();
    let finish: (value: unknown) => void = () => {};
    const { calls, sent } = adapter({ load: () => new Promise((resolve) => (finish = resolve)) });
    await libraries.run(calls, script, [], []);
    await libraries.run(calls, script, [], []);
    finish('ok');
    await settle();
    await libraries.run(calls, script, [], []);
    expect(sent).toEqual(['load script', 'eval script', 'sha script', 'fcall script']);
  });

  // The reorder a clean-clone CI run met: a grant sent by EVALSHA while its library loaded came back NOSCRIPT
  // and ran again (by EVAL) after a peek of the same key asked behind it by FCALL of a loaded library.
  it('no call is sent by a sha1 the server may not know: calls leave in the order asked, none sent twice', async () => {
    const libraries = new FunctionLibraries();
    const { calls, sent } = adapter({ load: async () => 'ok' });
    await libraries.run(calls, other, [], []);
    await settle();
    sent.length = 0;
    const first = libraries.run(calls, script, [], []);
    const second = libraries.run(calls, other, [], []);
    await Promise.all([first, second]);
    expect(sent).toEqual(['load script', 'eval script', 'fcall other']);
  });

  it('a server without FUNCTION (before Redis 7) runs every script by source once, then by sha1; asked once', async () => {
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
    expect(sent).toEqual(['load script', 'eval script', 'sha script', 'sha script']);
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
    expect(sent).toEqual(['load script', 'eval script', 'sha script', 'load script', 'sha script', 'fcall script']);
    expect(libraries.available).toBe(true);
  });

  it('a load that never answers is not asked again; calls go by sha1 meanwhile, none waits for it', async () => {
    const libraries = new FunctionLibraries();
    const { calls, sent } = adapter({ load: () => new Promise(() => {}) });
    for (let i = 0; i < 3; i++) await libraries.run(calls, script, [], []);
    expect(sent).toEqual(['load script', 'eval script', 'sha script', 'sha script']);
  });

  it('a load that throws at once is a failed load, tried again later', async () => {
    const libraries = new FunctionLibraries();
    const calls: ScriptCalls = {
      ...adapter({ load: async () => 'ok' }).calls,
      load: () => {
        throw new Error('Connection is closed.');
      },
    };
    await expect(libraries.run(calls, script, [], [])).resolves.toEqual(Buffer.from('e'));
    await settle();
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

  it('one load at a time per library, however many calls ask meanwhile', async () => {
    const libraries = new FunctionLibraries();
    let finish: (value: unknown) => void = () => {};
    const { calls, sent } = adapter({ load: () => new Promise((resolve) => (finish = resolve)) });
    await Promise.all(Array.from({ length: 5 }, () => libraries.run(calls, script, [], [])));
    finish('ok');
    await settle();
    await libraries.run(calls, script, [], []);
    expect(sent.filter((s) => s === 'load script')).toHaveLength(1);
    expect(sent.at(-1)).toBe('fcall script');
  });

  it('a library the server lost is loaded again; the call that met the loss runs by sha1 meanwhile', async () => {
    const libraries = new FunctionLibraries();
    let lost = false;
    const { calls, sent } = adapter({
      load: async () => {
        lost = false;
        return 'ok';
      },
      fcall: async () => {
        if (lost) throw new Error('ERR Function not found');
        return Buffer.from('f');
      },
    });
    await libraries.run(calls, script, [], []);
    await settle();
    await libraries.run(calls, script, [], []);
    lost = true;
    await libraries.run(calls, script, [], []);
    await settle();
    await libraries.run(calls, script, [], []);
    expect(sent).toEqual([
      'load script',
      'eval script',
      'fcall script',
      'fcall script',
      'load script',
      'sha script',
      'fcall script',
    ]);
  });
});
