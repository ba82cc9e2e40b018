import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// The layers and modules of docs/architecture.md, enforced on import paths. A later entry that
// sets no-restricted-imports for a file replaces an earlier one, so each entry lists every
// pattern that applies to its files.
const otherModulesRepo = {
  group: ['../*/*.repo', '../*/*.repo.js', '**/modules/*/*.repo', '**/modules/*/*.repo.js'],
  message:
    "Outside its module, a module's data is taken through its service or other named files (its public face), never its repo.",
};
const depsFactory = {
  group: ['**/deps', '**/deps.js'],
  message:
    'Import the Deps type from deps.types.ts: deps.ts (makeDeps) is for the composition root and tests.',
};
const http = {
  group: ['**/http/*', '../http', '../../http'],
  message: 'db/ and repos sit below HTTP: identity is server/identity.ts, list filters db/filters.ts.',
};
const server = {
  group: ['**/server/*', '**/server'],
  message: 'src/contract and src/client are shared with the agent and the CLI: they never import src/server.',
};
const restrict = (...patterns) => ({ 'no-restricted-imports': ['error', { patterns }] });

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'data/**', 'coverage/**', 'bench/.data/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        URL: 'readonly',
        fetch: 'readonly',
        AbortController: 'readonly',
        setImmediate: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-floating-promises': 'error',
      // Off: an async function without await is how this code meets a Promise-returning contract
      // (Fastify plugins and handlers, Kysely migrations' down, the runtime, mailer and SMS
      // interfaces, test fakes of them), so that a throw inside becomes a rejection.
      '@typescript-eslint/require-await': 'off',
      // Off: every finding was Kysely's expression builder, whose functions are meant to be
      // destructured (`({ exists, selectFrom }) => …`) and do not use `this`.
      '@typescript-eslint/unbound-method': 'off',
      'no-console': 'off',
    },
  },
  {
    files: ['src/server/modules/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: restrict(otherModulesRepo, depsFactory),
  },
  {
    files: ['src/server/http/**/*.ts', 'src/server/jobs/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: restrict(otherModulesRepo, depsFactory),
  },
  {
    files: ['src/server/*.ts'],
    ignores: ['**/*.test.ts', 'src/server/deps.ts', 'src/server/main.ts', 'src/server/cluster.ts'],
    rules: restrict(otherModulesRepo),
  },
  {
    files: ['src/server/modules/**/*.repo.ts'],
    rules: restrict(otherModulesRepo, depsFactory, http),
  },
  { files: ['src/server/db/**/*.ts'], ignores: ['**/*.test.ts'], rules: restrict(depsFactory, http) },
  { files: ['src/contract/**/*.ts', 'src/client/**/*.ts'], rules: restrict(server) },
  {
    // Generated JavaScript is how these files make fast row builders and predicates; its source is
    // built from our own field definitions and column names, never from request text.
    files: [
      'src/server/db/connection.ts',
      'src/server/modules/offers/offers.service.ts',
      'src/server/modules/offers/offers.tester.ts',
    ],
    rules: { '@typescript-eslint/no-implied-eval': 'off' },
  },
  {
    // Tests read JSON reply bodies, which the test helpers type as `any` on purpose: the
    // assertions are what check their shape, so the no-unsafe-* rules would only ask for casts.
    files: ['**/*.test.ts', 'test/**/*.ts', 'src/**/*.testkit.ts', 'src/**/*-standin.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    // React ignores what an event handler returns, so an async onClick or onSubmit is fine there;
    // promises passed anywhere else that expects a void callback are still errors.
    files: ['web/src/**/*.tsx'],
    rules: {
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { attributes: false } }],
    },
  },
  // Plain JavaScript (bin/, bench/, scripts/, this file) and the web build's config are not part
  // of a TypeScript program.
  { files: ['**/*.js', '**/*.mjs', 'web/vite.config.ts'], ...tseslint.configs.disableTypeChecked },
);
