#!/usr/bin/env node
// The one executable of the package. `npm ci` builds dist/ in `prepare`: the compiled modules and
// their one-file bundle (scripts/bundle.mjs), which starts faster; the modules serve when the
// bundle is absent.
import { existsSync } from 'node:fs';

const bundle = new URL('../dist/cli/main.bundle.js', import.meta.url);
const { main } = await import(existsSync(bundle) ? bundle.href : '../dist/cli/main.js');

main(process.argv).then(
  (code) => {
    if (typeof code === 'number') process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`openrig: ${err && err.message ? err.message : String(err)}\n`);
    process.exitCode = 1;
    // A failed command ends: whatever it left open (an IPC channel, a pool, a timer) keeps it
    // alive for half a second at most, its output written meanwhile.
    setTimeout(() => process.exit(1), 500).unref();
  },
);
