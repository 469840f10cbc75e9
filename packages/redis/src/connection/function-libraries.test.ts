import { afterEach, describe, expect, it, vi } from 'vitest';
import { decideOneScript } from '../scripts.js';
import { FunctionLibraries, LOAD_WAIT_MS, RELOAD_AFTER_MS, type ScriptCalls } from './function-libraries.js';

// The paths a real server cannot show here (it is Redis 7): a server without FUNCTION, a load lost to a
// dropped connection, a load that hangs. The others (load, FCALL, Function not found, NOPERM) run on real
// servers in test/redis/store.test.ts, test/clients/clients.test.ts and test/clients/production.test.ts.

const script = decideOneScript('fixedWindow');
const other = decideOneScript('tokenBucket');

/** A promise and the function that settles it. */
function pending<T = unknown>() {
  let settle: { resolve: (value: T) => void; reject: (error: Error) => void } = {
    resolve: () => {},
    reject: () => {},
  };
  const promise = new Promise<T>((resolve, reject) => (settle = { resolve, reject }));
  return { promise, ...settle };
}

/** An adapter whose server answers as `server` says, recording what was sent, in order. */
function adapter(server: {
  connected?: boolean;
  load: (library: string) => Promise<unknown>;
  fcall?: () => Promise<unknown>;
  bySha?: () => Promise<Buffer>;
}) {
  const sent: string[] = [];
  const name = (functionName: string) => (functionName === script.functionName ? 'script' : 'other');
  const calls: ScriptCalls = {
    connected: () => server.connected ?? true,
    fcall: async (functionName) => {
      sent.push(`fcall ${name(functionName)}`);
      return (server.fcall ?? (async () => Buffer.from('f')))();
    },
    load: async (library) => {
      sent.push(`load ${library === script.library ? 'script' : 'other'}`);
      return server.load(library);
    },
    bySha: async (s) => {
      sent.push(`sha ${name(s.functionName)}`);
      return (server.bySha ?? (async () => Buffer.from('s')))();
    },
  };
  return { calls, sent };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('FunctionLibraries', () => {
  it("loads a script's library before its first call, then runs it by FCALL", async () => {
    const libraries = new FunctionLibraries();
    const { calls, sent } = adapter({ load: async () => 'ok' });
    await libraries.run(calls, script, [], []);
    await libraries.run(calls, script, [], []);
    expect(sent).toEqual(['load script', 'fcall script', 'fcall script']);
  });

  it('a server without FUNCTION (before Redis 7) runs every script by sha1, and is asked once', async () => {
    const libraries = new FunctionLibraries();
    const { calls, sent } = adapter({
      load: async () => {
        throw new Error("ERR unknown command 'FUNCTION', with args beginning with: 'LOAD' 'REPLACE'");
      },
    });
    for (let i = 0; i < 3; i++) await libraries.run(calls, script, [], []);
    expect(sent).toEqual(['load script', 'sha script', 'sha script', 'sha script']);
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
    await libraries.run(calls, script, [], []);
    vi.advanceTimersByTime(RELOAD_AFTER_MS);
    await libraries.run(calls, script, [], []);
    await libraries.run(calls, script, [], []);
    expect(sent).toEqual(['load script', 'sha script', 'sha script', 'load script', 'fcall script', 'fcall script']);
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
    await expect(libraries.run(calls, script, [], [])).rejects.toThrow(/WRONGTYPE/);
    expect(libraries.available).toBe(true);
  });

  it('one load at a time per library, however many calls wait for it', async () => {
    const libraries = new FunctionLibraries();
    const load = pending();
    const { calls, sent } = adapter({ load: () => load.promise });
    const waiting = Array.from({ length: 5 }, () => libraries.run(calls, script, [], []));
    load.resolve('ok');
    await Promise.all(waiting);
    expect(sent).toEqual(['load script', ...Array.from({ length: 5 }, () => 'fcall script')]);
  });

  // The reorder a clean-clone CI run met: a grant sent by sha1 while its library loaded came back NOSCRIPT and
  // ran again after a peek of the same key asked behind it, by FCALL of a loaded library (Redis read no grant).
  it('a call of a loaded library asked while another library loads leaves after it, in the order asked', async () => {
    const libraries = new FunctionLibraries();
    const { calls, sent } = adapter({ load: async () => 'ok' });
    await libraries.run(calls, other, [], []);
    sent.length = 0;
    const first = libraries.run(calls, script, [], []);
    const second = libraries.run(calls, other, [], []);
    await Promise.all([first, second]);
    expect(sent).toEqual(['load script', 'fcall script', 'fcall other']);
  });

  it('two libraries load side by side, and the calls that wait for them leave in the order asked', async () => {
    const libraries = new FunctionLibraries();
    const loads = [pending(), pending()];
    let made = 0;
    const { calls, sent } = adapter({ load: () => (loads[made++] as ReturnType<typeof pending>).promise });
    const first = libraries.run(calls, script, [], []);
    const second = libraries.run(calls, other, [], []);
    expect(sent).toEqual(['load script', 'load other']);
    loads[1]?.resolve('ok');
    await new Promise((resolve) => setImmediate(resolve));
    expect(sent).toEqual(['load script', 'load other']);
    loads[0]?.resolve('ok');
    await Promise.all([first, second]);
    expect(sent).toEqual(['load script', 'load other', 'fcall script', 'fcall other']);
  });

  it("while a script's first call by sha1 is on its way, later calls wait for it; once run, they do not", async () => {
    const libraries = new FunctionLibraries();
    const reply = pending<Buffer>();
    let shaCalls = 0;
    const { calls, sent } = adapter({
      load: async () => {
        throw new Error('NOPERM this user has no permissions to run the FUNCTION command');
      },
      bySha: () => (++shaCalls === 1 ? reply.promise : Promise.resolve(Buffer.from('s'))),
    });
    const first = libraries.run(calls, script, [], []);
    const second = libraries.run(calls, other, [], []);
    await new Promise((resolve) => setImmediate(resolve));
    expect(sent).toEqual(['load script', 'load other', 'sha script']);
    reply.resolve(Buffer.from('s'));
    await Promise.all([first, second]);
    expect(sent).toEqual(['load script', 'load other', 'sha script', 'sha other']);
    // Both scripts have run by sha1 now: nothing waits for anything.
    const third = libraries.run(calls, script, [], []);
    const fourth = libraries.run(calls, other, [], []);
    expect(sent.slice(-2)).toEqual(['sha script', 'sha other']);
    await Promise.all([third, fourth]);
  });

  it('a library the server lost is loaded again, and the call that met the loss runs by FCALL after it', async () => {
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
    lost = true;
    await libraries.run(calls, script, [], []);
    expect(sent).toEqual(['load script', 'fcall script', 'fcall script', 'load script', 'fcall script']);
  });

  it('a client that knows it is not connected gets the call at once: nothing is held to be sent late', async () => {
    const libraries = new FunctionLibraries();
    const { calls, sent } = adapter({ connected: false, load: () => new Promise(() => {}) });
    await libraries.run(calls, script, [], []);
    await libraries.run(calls, other, [], []);
    expect(sent).toEqual(['sha script', 'sha other']);
  });

  it('a load that never answers holds later calls LOAD_WAIT_MS at most, then they run by sha1', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const libraries = new FunctionLibraries();
    const { calls, sent } = adapter({ load: () => new Promise(() => {}) });
    const first = libraries.run(calls, script, [], []);
    await vi.advanceTimersByTimeAsync(LOAD_WAIT_MS - 1);
    expect(sent).toEqual(['load script']);
    await vi.advanceTimersByTimeAsync(1);
    await first;
    expect(sent).toEqual(['load script', 'sha script']);
  });
});
