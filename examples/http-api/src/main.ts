/** The demo controller as a server: `PORT=3000 REDIS_URL=redis://... tsx src/main.ts`. */
import { curlLines, startDemo, stopOnSignal } from './server.js';

const running = await startDemo();
stopOnSignal(running);
console.log(`sluice http-api example listening on ${running.url} (${running.storeName})`);
for (const line of curlLines(running.url)) console.log(`  ${line}`);
