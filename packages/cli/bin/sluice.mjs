#!/usr/bin/env node
// The `sluice` command: runCli (src/cli.ts) on this process's arguments and streams; its exit code is the process's.
import { runCli } from '@sluice/cli';

process.exitCode = await runCli(process.argv.slice(2), {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  env: process.env,
});
