import { chmodSync, mkdtempSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  ConfigFileError,
  configDir,
  configPath,
  readConfig,
  removeConfig,
  updateConfig,
  writeConfig,
} from './config-file.js';

const tmp = () => mkdtempSync(join(tmpdir(), 'openrig-cfg-'));

describe('the config file', () => {
  it('lives in $XDG_CONFIG_HOME/openrig, else ~/.config/openrig', () => {
    expect(configDir({ HOME: '/home/u', XDG_CONFIG_HOME: '/x' })).toBe('/x/openrig');
    expect(configDir({ HOME: '/home/u' })).toBe('/home/u/.config/openrig');
    // A relative XDG_CONFIG_HOME is invalid per the XDG spec and ignored.
    expect(configDir({ HOME: '/home/u', XDG_CONFIG_HOME: 'rel' })).toBe('/home/u/.config/openrig');
  });

  it('is written 0600 in a 0700 directory, whatever the umask', () => {
    const env = { HOME: tmp() };
    const old = process.umask(0o000);
    try {
      writeConfig({ url: 'http://h', api_key: 'k' }, env);
    } finally {
      process.umask(old);
    }
    expect(statSync(configPath(env)).mode & 0o777).toBe(0o600);
    expect(statSync(configDir(env)).mode & 0o777).toBe(0o700);
    expect(readConfig(env)).toEqual({ url: 'http://h', api_key: 'k' });
  });

  it('tightens a directory that already existed with looser permissions to 0700', () => {
    const env = { HOME: tmp() };
    mkdirSync(configDir(env), { recursive: true });
    chmodSync(configDir(env), 0o755);
    writeConfig({ url: 'http://h' }, env);
    expect(statSync(configDir(env)).mode & 0o777).toBe(0o700);
  });

  it('replaces a broken file on update only when told to, saying why', () => {
    const env = { HOME: tmp() };
    mkdirSync(configDir(env), { recursive: true });
    writeFileSync(configPath(env), '{bad');
    expect(() => updateConfig({ url: 'http://h' }, env)).toThrow(ConfigFileError);
    const told: string[] = [];
    updateConfig({ url: 'http://h', api_key: 'k' }, env, (e) => told.push(e.message));
    expect(told).toHaveLength(1);
    expect(told[0]).toContain('is not valid JSON');
    expect(readConfig(env)).toEqual({ url: 'http://h', api_key: 'k' });
  });

  it('merges updates and drops fields set to undefined', () => {
    const env = { HOME: tmp() };
    updateConfig({ url: 'http://h', api_key: 'k', session_key: 's' }, env);
    updateConfig({ session_key: undefined }, env);
    expect(readConfig(env)).toEqual({ url: 'http://h', api_key: 'k' });
    expect(statSync(configPath(env)).mode & 0o777).toBe(0o600);
  });

  it('reads nothing when absent, and refuses a broken file clearly', () => {
    const env = { HOME: tmp() };
    expect(readConfig(env)).toEqual({});
    expect(removeConfig(env)).toBe(false);
    mkdirSync(configDir(env), { recursive: true });
    writeFileSync(configPath(env), '{not json');
    expect(() => readConfig(env)).toThrow(ConfigFileError);
    expect(() => readConfig(env)).toThrow('is not valid JSON');
    expect(removeConfig(env)).toBe(true);
  });
});
