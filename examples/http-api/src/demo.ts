/**
 * `npm run demo`: starts the http-api example (memory store, no Redis), sends it a short burst of real
 * HTTP requests, prints what was allowed and refused with the headers, and leaves the server up.
 */
import { curlLines, type RunningDemo, startDemo, stopOnSignal } from './server.js';

async function start(): Promise<RunningDemo> {
  try {
    return await startDemo();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    return startDemo(0); // port 3000 taken: any free port will do for a demo
  }
}

const burst: { path: string; headers?: Record<string, string>; times: number; why: string }[] = [
  { path: '/limiter/count?key=alice', times: 3, why: '2 per 10 s per key: the third is refused' },
  { path: '/limiter/count?key=bob', times: 1, why: 'another key has its own 2' },
  { path: '/limiter/rate', times: 2, why: '1 per 5 s: the second must wait 5 s' },
  { path: '/limiter/rate2', times: 2, why: '1 per 30 s, checked in the handler' },
  {
    path: '/api/orders',
    headers: { 'X-User-Id': '42' },
    times: 3,
    why: 'user 42: every rule of the policy in the headers',
  },
  { path: '/api/orders', times: 1, why: 'no user: limited by client address, not one shared bucket' },
];

const running = await start();
stopOnSignal(running);
console.log(`sluice demo: the http-api example on ${running.url} (${running.storeName})\n`);
for (const { path, headers, times, why } of burst) {
  console.log(
    `GET ${path}${
      headers
        ? `  (${Object.entries(headers)
            .map(([k, v]) => `${k}: ${v}`)
            .join(', ')})`
        : ''
    }  - ${why}`,
  );
  for (let i = 0; i < times; i++) {
    const res = await fetch(running.url + path, { headers: headers ?? {} });
    const shown = ['retry-after', 'ratelimit', 'ratelimit-policy']
      .map((name) => [name, res.headers.get(name)] as const)
      .filter(([, value]) => value !== null)
      .map(([name, value]) => `${name}: ${value}`);
    await res.arrayBuffer();
    console.log(`   ${res.status === 200 ? '200 allowed' : `${res.status} REFUSED`}   ${shown.join('   ')}`);
  }
}
console.log('\nThe server stays up (Ctrl-C stops it). Try:');
for (const line of curlLines(running.url)) console.log(`  ${line}`);
