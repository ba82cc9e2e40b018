// The exact Engine API body of an instance's container: NVIDIA device request with the assigned
// GPU indices, CPU and memory limits, published ports, labels for re-adoption, the environment;
// and registry credentials parsed from image_login.
import { describe, expect, it } from 'vitest';
import { containerCreateBody, parseImageLogin } from './runtime-docker.js';
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
};

describe('containerCreateBody', () => {
  it('is the exact Engine API body (GPUs, limits, ports, labels, env)', () => {
    const body = containerCreateBody({
      spec,
      agentUid: 'agent-uid-1',
      sshPort: 41022,
      hostPorts: { '8080/tcp': 41080, '9000/udp': 41090 },
      diskQuota: true,
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
      Labels: { 'openrig.instance': '42', 'openrig.agent': 'agent-uid-1', 'openrig.ssh_port': '41022' },
      ExposedPorts: { '8080/tcp': {}, '9000/udp': {} },
      HostConfig: {
        Init: true,
        PortBindings: {
          '8080/tcp': [{ HostIp: '', HostPort: '41080' }],
          '9000/udp': [{ HostIp: '', HostPort: '41090' }],
        },
        RestartPolicy: { Name: 'no' },
        PidsLimit: 32768,
        NanoCpus: 8_000_000_000,
        Memory: 32768 * 1024 * 1024,
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
    expect(host.StorageOpt).toBeUndefined();
    expect(host.NanoCpus).toBeUndefined();
    expect(host.PortBindings).toEqual({});
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
