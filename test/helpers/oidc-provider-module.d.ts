// oidc-provider ships no type declarations; the tests use it through test/helpers/oidc.ts only.
declare module 'oidc-provider';
