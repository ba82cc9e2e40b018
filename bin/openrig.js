#!/usr/bin/env node
// The one executable of the package (operator-contract.md, "Install and run").
// `npm ci` builds dist/ in `prepare`; this file needs no build step itself.
import { main } from '../dist/cli/main.js';

main(process.argv).then(
  (code) => {
    if (typeof code === 'number') process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`openrig: ${err && err.message ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
