// The exact Engine API body of an instance's container: NVIDIA device request with the assigned
// GPU indices, CPU and memory limits, published ports, labels for re-adoption, the environment;
// registry credentials parsed from image_login; and the main process per runtype.
import { describe, expect, it } from 'vitest';
import {
  containerCreateBody,
  imageKey,
  listedPorts,
  mainProcess,
  parseImageLogin,
} from './runtime-docker.js';
import type { InstanceSpec } from './runtime.js';

const spec: InstanceSpec = {
  id: 42,
  image: 'pytorch/pytorch:2.3',
  disk: 20,
  onstart: 'echo hi',
  env: { FOO: 'bar', CONTAINER_API_KEY: 'ori_k', CONTAINER_ID: '42' },
  authorizedKeys: [],
  ports: [
    { container: 8080, proto: 'tcp' },
    { container: 9000, proto: 'udp' },
  ],
  limits: { cpus: 8, memoryMb: 32768 },
  gpus: ['2', '3'],
  publicHost: '203.0.113.7',
  generation: 3,
};

describe('containerCreateBody', () => {
  it('is the exact Engine API body (GPUs, limits, ports, labels, env, hardening)', () => {
    const body = containerCreateBody({
      spec,
      agentUid: 'agent-uid-1',
      sshPort: 41022,
      hostPorts: { '8080/tcp': 41080, '9000/udp': 41090 },
      diskQuota: true,
      hostIp: '203.0.113.7',
    });
    expect(body).toEqual({
      Image: 'pytorch/pytorch:2.3',
      Hostname: 'C.42',
      Entrypoint: ['/bin/sh', '-c', expect.stringContaining('/bin/sh -c "$1" &'), 'openrig-main'],
      Cmd: ['echo hi'],
      Env: [
        'FOO=bar',
        'CONTAINER_API_KEY=ori_k',
        'CONTAINER_ID=42',
        'VAST_TCP_PORT_22=41022',
        'OPENRIG_SSH_PORT=41022',
        'PUBLIC_IPADDR=203.0.113.7',
        'VAST_TCP_PORT_8080=41080',
        'OPENRIG_TCP_PORT_8080=41080',
        'VAST_UDP_PORT_9000=41090',
        'OPENRIG_UDP_PORT_9000=41090',
      ],
      Labels: {
        'openrig.instance': '42',
        'openrig.agent': 'agent-uid-1',
        'openrig.ssh_port': '41022',
        'openrig.generation': '3',
      },
      ExposedPorts: { '8080/tcp': {}, '9000/udp': {} },
      HostConfig: {
        Init: true,
        // Published on the operator's address only, never on every address (nor :: by accident).
        PortBindings: {
          '8080/tcp': [{ HostIp: '203.0.113.7', HostPort: '41080' }],
          '9000/udp': [{ HostIp: '203.0.113.7', HostPort: '41090' }],
        },
        RestartPolicy: { Name: 'no' },
        // A bridge of its own kind: no container reaches another on it.
        NetworkMode: 'openrig-instances',
        CapDrop: ['NET_RAW', 'MKNOD'],
        SecurityOpt: ['no-new-privileges'],
        PidsLimit: 8192,
        LogConfig: { Type: 'json-file', Config: { 'max-size': '20m', 'max-file': '3' } },
        NanoCpus: 8_000_000_000,
        Memory: 32768 * 1024 * 1024,
        MemorySwap: 32768 * 1024 * 1024,
        DeviceRequests: [{ Driver: 'nvidia', DeviceIDs: ['2', '3'], Capabilities: [['gpu']] }],
        StorageOpt: { size: '20G' },
      },
    });
  });

  it('leaves the device request out with simulated GPUs, and the size option where unsupported', () => {
    const body = containerCreateBody({
      spec: { ...spec, gpus: null, ports: [], limits: undefined },
      agentUid: 'u',
      sshPort: 1,
      hostPorts: {},
      diskQuota: false,
    });
    const host = body.HostConfig as Record<string, unknown>;
    expect(host.DeviceRequests).toBeUndefined();
    // Nothing of the host is mounted into a container, whatever the spec.
    expect(host.Binds).toBeUndefined();
    expect(host.Mounts).toBeUndefined();
    expect(body.Volumes).toBeUndefined();
    expect(host.StorageOpt).toBeUndefined();
    expect(host.NanoCpus).toBeUndefined();
    expect(host.PortBindings).toEqual({});
  });

  it('publishes ports on 0.0.0.0 when no address is given: IPv4 only, never every address', () => {
    const body = containerCreateBody({
      spec,
      agentUid: 'u',
      sshPort: 1,
      hostPorts: { '8080/tcp': 41080 },
      diskQuota: false,
    });
    expect((body.HostConfig as { PortBindings: unknown }).PortBindings).toEqual({
      '8080/tcp': [{ HostIp: '0.0.0.0', HostPort: '41080' }],
    });
  });
});

describe('mainProcess: Entrypoint and Cmd of the container', () => {
  const base = { ...spec, onstart: '/bin/sh' };
  it("runtype args with an entrypoint: it replaces the image's, the arguments are its Cmd", () => {
    expect(mainProcess({ ...base, entrypoint: '/bin/sh', args: ['-c', 'echo hi; sleep 1000'] })).toEqual({
      Entrypoint: ['/bin/sh'],
      Cmd: ['-c', 'echo hi; sleep 1000'],
    });
    // As `docker run --entrypoint E IMAGE`: with no arguments E runs alone, not with the image's Cmd.
    expect(mainProcess({ ...base, entrypoint: 'bash', args: [] })).toEqual({ Entrypoint: ['bash'], Cmd: [] });
  });
  it("runtype args without one: the image's entrypoint gets the arguments, or its defaults run", () => {
    expect(mainProcess({ ...base, entrypoint: null, args: ['serve', '--port', '80'] })).toEqual({
      Cmd: ['serve', '--port', '80'],
    });
    expect(mainProcess({ ...base, entrypoint: null, args: [] })).toEqual({});
  });
  it('other runtypes (and older servers, which send no args): the main loop running onstart', () => {
    for (const s of [base, { ...base, args: null, entrypoint: 'ignored' }])
      expect(mainProcess(s)).toEqual({
        Entrypoint: ['/bin/sh', '-c', expect.stringContaining('/bin/sh -c "$1" &'), 'openrig-main'],
        Cmd: ['/bin/sh'],
      });
  });
  it('is what the create body carries', () => {
    const body = containerCreateBody({
      spec: { ...base, entrypoint: '/bin/sh', args: ['-c', 'x'] },
      agentUid: 'u',
      sshPort: 1,
      hostPorts: {},
      diskQuota: false,
    });
    expect(body).toMatchObject({ Entrypoint: ['/bin/sh'], Cmd: ['-c', 'x'] });
    const imageOwn = containerCreateBody({
      spec: { ...base, args: [] },
      agentUid: 'u',
      sshPort: 1,
      hostPorts: {},
      diskQuota: false,
    });
    expect(imageOwn).not.toHaveProperty('Entrypoint');
    expect(imageOwn).not.toHaveProperty('Cmd');
  });
});

describe('parseImageLogin', () => {
  it('reads -u USER -p PASSWORD [REGISTRY]', () => {
    expect(parseImageLogin('-u bob -p s3cret registry.example.com', 'registry.example.com/a:1')).toEqual({
      username: 'bob',
      password: 's3cret',
      serveraddress: 'registry.example.com',
    });
    expect(parseImageLogin('-u bob -p pw', '127.0.0.1:5000/x/y:1')).toMatchObject({
      serveraddress: '127.0.0.1:5000',
    });
    expect(parseImageLogin('-u bob -p pw', 'ubuntu:22.04')).toMatchObject({
      serveraddress: 'https://index.docker.io/v1/',
    });
    expect(parseImageLogin('', 'ubuntu')).toBeNull();
    expect(parseImageLogin(null, 'ubuntu')).toBeNull();
  });
});

describe('imageKey', () => {
  it('names a tag reference as the engine resolves it; ids and digests name no tag', () => {
    expect(imageKey('ubuntu')).toBe('docker.io/library/ubuntu:latest');
    expect(imageKey('docker.io/ubuntu:22.04')).toBe('docker.io/library/ubuntu:22.04');
    expect(imageKey('index.docker.io/library/ubuntu:22.04')).toBe('docker.io/library/ubuntu:22.04');
    expect(imageKey('me/app:1')).toBe('docker.io/me/app:1');
    expect(imageKey('127.0.0.1:5000/a/b')).toBe('127.0.0.1:5000/a/b:latest');
    expect(imageKey('localhost/a:2')).toBe('localhost/a:2');
    expect(imageKey('sha256:' + 'a'.repeat(64))).toBeNull();
    expect(imageKey('0123456789ab')).toBeNull();
    expect(imageKey('reg.example/a@sha256:' + 'b'.repeat(64))).toBeNull();
  });
});

describe('listedPorts', () => {
  it("a listed container's published ports as clients read them, one binding each, the SSH port as 22", () => {
    expect(
      listedPorts(
        {
          Id: 'x',
          Names: ['/openrig-1'],
          Labels: {},
          State: 'running',
          Ports: [
            { IP: '0.0.0.0', PrivatePort: 8080, PublicPort: 41080, Type: 'tcp' },
            { IP: '::', PrivatePort: 8080, PublicPort: 41080, Type: 'tcp' },
            { IP: '127.0.0.1', PrivatePort: 9000, PublicPort: 41090, Type: 'udp' },
            { PrivatePort: 7000, Type: 'tcp' },
          ],
        },
        41022,
      ),
    ).toEqual({
      '22/tcp': [{ HostIp: '0.0.0.0', HostPort: '41022' }],
      '8080/tcp': [{ HostIp: '0.0.0.0', HostPort: '41080' }],
      '9000/udp': [{ HostIp: '0.0.0.0', HostPort: '41090' }],
    });
  });
});
