import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_URL, idList, intArg, resolveSettings, sha256, UsageError } from './context.js';
import { ConfigFileError, configDir, configPath, writeConfig } from '../config-file.js';
import { parseWhen } from './machines.js';

const home = () => mkdtempSync(join(tmpdir(), 'openrig-ctx-'));

describe('where settings come from', () => {
  it('flag beats environment beats config file beats default', () => {
    const env: NodeJS.ProcessEnv = { HOME: home() };
    expect(resolveSettings({}, env)).toMatchObject({ url: DEFAULT_URL, apiKey: null });
    writeConfig({ url: 'http://file', api_key: 'kf' }, env);
    expect(resolveSettings({}, env)).toMatchObject({ url: 'http://file', apiKey: 'kf' });
    env.OPENRIG_URL = 'http://env/';
    env.OPENRIG_API_KEY = 'ke';
    expect(resolveSettings({}, env)).toMatchObject({ url: 'http://env', apiKey: 'ke' });
    expect(resolveSettings({ url: 'https://flag', apiKey: 'kx' }, env)).toMatchObject({
      url: 'https://flag',
      apiKey: 'kx',
    });
  });

  it('a broken config file matters only when a setting would come from it', () => {
    const env: NodeJS.ProcessEnv = { HOME: home() };
    mkdirSync(configDir(env), { recursive: true });
    writeFileSync(configPath(env), '{bad');
    expect(() => resolveSettings({}, env)).toThrow(ConfigFileError);
    expect(() => resolveSettings({ url: 'http://h' }, env)).toThrow(ConfigFileError);
    expect(() => resolveSettings({ apiKey: 'k' }, env)).toThrow(ConfigFileError);
    expect(resolveSettings({ url: 'http://h', apiKey: 'k' }, env)).toMatchObject({
      url: 'http://h',
      apiKey: 'k',
      sessionKey: null,
    });
    expect(resolveSettings({}, { ...env, OPENRIG_URL: 'http://e', OPENRIG_API_KEY: 'ke' })).toMatchObject({
      url: 'http://e',
      apiKey: 'ke',
    });
    // login and logout, which replace or remove the file, pass over it.
    expect(resolveSettings({ url: 'http://h' }, env, true)).toMatchObject({ url: 'http://h', apiKey: null });
  });

  it('uses a stored 2FA session only for the server and API key it was opened with', () => {
    const env: NodeJS.ProcessEnv = { HOME: home() };
    writeConfig(
      {
        url: 'http://h',
        api_key: 'k',
        session_key: 'ors_s',
        session_url: 'http://h',
        session_api_key_sha256: sha256('k'),
      },
      env,
    );
    expect(resolveSettings({}, env).sessionKey).toBe('ors_s');
    expect(resolveSettings({ apiKey: 'other' }, env).sessionKey).toBeNull();
    expect(resolveSettings({ url: 'http://elsewhere' }, env).sessionKey).toBeNull();
  });

  it('refuses a URL that is not http(s) as a usage error (exit 2)', () => {
    const e = (() => {
      try {
        resolveSettings({ url: 'ftp://x' }, { HOME: home() });
      } catch (err) {
        return err;
      }
    })();
    expect(e).toBeInstanceOf(UsageError);
    expect((e as UsageError).exitCode).toBe(2);
    expect(() => resolveSettings({ url: 'not a url' }, { HOME: home() })).toThrow('is not a URL');
  });
});

describe('argument parsing', () => {
  it('reads IDs and ID lists', () => {
    expect(intArg('12', 'ID')).toBe(12);
    expect(() => intArg('0', 'ID')).toThrow(UsageError);
    expect(() => intArg('1.5', 'ID')).toThrow('positive whole number');
    expect(idList('1,2, 3', 'm')).toEqual([1, 2, 3]);
    expect(() => idList('', 'm')).toThrow('at least one');
  });

  it('reads a maintenance start as epoch seconds or a UTC date', () => {
    expect(parseWhen('1800000000')).toBe(1_800_000_000);
    expect(parseWhen('2027-01-15T08:00Z')).toBe(1_800_000_000);
    expect(parseWhen('2027-01-15 08:00')).toBe(1_800_000_000);
    expect(parseWhen('2027-01-15')).toBe(1_799_971_200);
    expect(() => parseWhen('tomorrow')).toThrow(UsageError);
    // Only these forms: Date.parse would read these as dates in the local zone.
    for (const loose of ['-5', 'Jan 15 2027', '2027/01/15', '15 January 2027 08:00'])
      expect(() => parseWhen(loose), loose).toThrow(UsageError);
    expect(parseWhen('2027-01-15T09:00+01:00')).toBe(1_800_000_000);
  });
});
