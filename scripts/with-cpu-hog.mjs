// Runs a command with one busy loop per CPU beside it, to show that tests hold on a loaded machine:
//   node scripts/with-cpu-hog.mjs vitest run test/hybrid/fleet.test.ts
// The busy loops are child processes, killed when the command ends (whatever its exit).
import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';

const [command, ...args] = process.argv.slice(2);
if (command === undefined) {
  console.error('usage: node scripts/with-cpu-hog.mjs <command> [args...]');
  process.exit(2);
}
const hogs = Array.from({ length: availableParallelism() }, () =>
  spawn(process.execPath, ['-e', 'for (;;);'], { stdio: 'ignore' }),
);
console.log(`${hogs.length} busy loops running beside: ${[command, ...args].join(' ')}`);
const child = spawn(command, args, { stdio: 'inherit', shell: process.platform === 'win32' });
const stop = () => {
  for (const hog of hogs) hog.kill('SIGKILL');
};
process.on('SIGINT', stop);
child.on('exit', (code, signal) => {
  stop();
  process.exit(code ?? (signal ? 1 : 0));
});
