// Bundles the built command (dist/cli/main.js and everything it imports, dependencies included)
// into dist/cli/main.bundle.js, which bin/openrig.js runs when it exists. Loading a few files
// instead of about a thousand modules (Kysely alone is 279) halves a process's start-up, and
// `serve` starts one process per core. What the command loads with import() (the server, the
// HTTP application, the agent's runtimes) goes into chunks of its own under dist/cli/chunks, so
// a process parses only what it runs: a user command never parses the server, and the primary of
// `serve --workers N`, which serves no HTTP, never parses the HTTP application.
// Packages with native code or worker-thread files stay outside and load from node_modules as
// usual; so do those loaded on first use (lazyRequire).
// Whitespace and syntax are minified, names kept (stack traces still name every function): V8
// keeps each script's source in memory, and half the source is 7 MB less in every process.
import { rmSync } from 'node:fs';
import { build } from 'esbuild';

// Chunk names change with their content: the previous build's must not pile up.
rmSync('dist/cli/chunks', { recursive: true, force: true });

await build({
  entryPoints: ['dist/cli/main.js'],
  outdir: 'dist/cli',
  entryNames: '[name].bundle',
  chunkNames: 'chunks/[name]-[hash]',
  splitting: true,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  minifyWhitespace: true,
  minifySyntax: true,
  external: [
    'better-sqlite3',
    'ssh2',
    'cpu-features',
    'pg-native',
    'pino',
    'thread-stream',
    '@node-rs/argon2',
    // It loads `cookie` with import(), which a bundle answers with a CommonJS module's default
    // export alone; loaded by Node it gets the module's named exports.
    '@fastify/cookie',
  ],
  // CommonJS dependencies inside an ES module bundle call require() for Node's own modules.
  banner: {
    js: "import { createRequire as __openrigRequire } from 'node:module'; const require = __openrigRequire(import.meta.url);",
  },
  logLevel: 'warning',
});
