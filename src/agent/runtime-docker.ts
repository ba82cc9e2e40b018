// The Docker runtime: one container per instance, named `openrig-<id>` and labelled with the
// instance id and the agent's id (re-adoption after an agent restart finds them by label), through
// the Engine API (docker-engine.ts). The container's main process is a small shell loop under the
// engine's init; `onstart` runs once per start in the background, its output in the container log.
// An instance of runtype `args` runs its image as is instead: its entrypoint (or the given one)
// with the instance's arguments is the main process, and its end is the instance's.
// SSH is the agent's own per-instance server (container-ssh.ts) on a host port fixed at creation
// (a label), so `ssh -p` keeps working across stop/start and agent restarts.
// Per instance the agent keeps STATE_DIR/containers/ID/: the SSH host key, authorized_keys, a
// `stopped` marker (a container the agent stopped is `stopped`; one that died by itself `exited`)
// and the spools of SFTP uploads under way; STATE_DIR/private-images.json records the images
// pulled with credentials. None of it is mounted into any container.
// Every container is hardened (containerCreateBody): a network on which containers cannot reach
// each other, no raw sockets, no new privileges, limits on processes, memory and its log.
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { ed25519KeyPair } from '../contract/ssh-keygen.js';
import {
  DockerEngine,
  EngineError,
  splitRef,
  type ContainerInspect,
  type ContainerSummary,
  type RegistryAuth,
} from './docker-engine.js';
import { containerRoot, createContainerSshServer, runInContainer } from './container-ssh.js';
import { serverCopyGrant, serverKeys, type KeyCheck } from './key-check.js';
import {
  LOGS_MAX_BYTES,
  LOGS_MAX_LINES,
  type DiskUsage,
  type InstanceSpec,
  type ObservedState,
  type PortMap,
  type Runtime,
} from './runtime.js';
import { dirSize } from './usage.js';
import { VolumeStore } from './volumes.js';

export const LABEL_INSTANCE = 'openrig.instance';
export const LABEL_AGENT = 'openrig.agent';
export const LABEL_SSH_PORT = 'openrig.ssh_port';
/** The configuration generation the container was created from (absent: 1, older containers). */
export const LABEL_GENERATION = 'openrig.generation';

/**
 * The container's main process: runs `onstart` ($1) once in the background, its output going to
 * the container log, then waits until stopped. Its exit is the instance's.
 */
const MAIN = [
  'if [ -n "$1" ]; then /bin/sh -c "$1" & fi',
  "trap 'exit 0' TERM INT",
  'while :; do sleep 3600 & wait $!; done',
].join('\n');

/**
 * Entrypoint and Cmd of the container. Runtype `args` runs the image as `docker run [--entrypoint
 * E] IMAGE ARGS…` does: the arguments replace the image's Cmd and go to its entrypoint, or to the
 * given one (which, as with `--entrypoint`, drops the image's Cmd: with no arguments it runs
 * alone); with neither, the image's own defaults run. Otherwise the main process is MAIN, which
 * runs `onstart`.
 */
export function mainProcess(spec: InstanceSpec): { Entrypoint?: string[]; Cmd?: string[] } {
  if (!spec.args) return { Entrypoint: ['/bin/sh', '-c', MAIN, 'openrig-main'], Cmd: [spec.onstart] };
  if (spec.entrypoint) return { Entrypoint: [spec.entrypoint], Cmd: spec.args };
  return spec.args.length > 0 ? { Cmd: spec.args } : {};
}

export function containerName(id: number): string {
  return `openrig-${id}`;
}

/** `-u USER -p PASSWORD [REGISTRY]` → engine credentials; null when it says nothing usable. */
export function parseImageLogin(login: string | null | undefined, image: string): RegistryAuth | null {
  if (!login?.trim()) return null;
  const t = login.trim().split(/\s+/);
  let username = '';
  let password = '';
  let server: string | undefined;
  for (let i = 0; i < t.length; i++) {
    if (t[i] === '-u') username = t[++i] ?? '';
    else if (t[i] === '-p') password = t[++i] ?? '';
    else server = t[i];
  }
  if (!username) return null;
  // Without a registry named, the image's own (its first path part when that has a dot or port).
  const first = image.split('/')[0]!;
  const fromImage = image.includes('/') && /[.:]/.test(first) ? first : undefined;
  return { username, password, serveraddress: server ?? fromImage ?? 'https://index.docker.io/v1/' };
}

/**
 * An image reference as the engine resolves it, for comparing references: `ubuntu` is
 * `docker.io/library/ubuntu:latest`. Null for a reference that names no tag (an id, a digest).
 */
export function imageKey(ref: string): string | null {
  if (ref.includes('@') || /^(sha256:)?[0-9a-f]{12,64}$/.test(ref)) return null;
  const { name, tag } = splitRef(ref);
  const parts = name.split('/');
  let full = name;
  if (parts.length === 1) full = `docker.io/library/${name}`;
  else if (parts[0] === 'index.docker.io') full = `docker.io/${parts.slice(1).join('/')}`;
  else if (!/[.:]/.test(parts[0]!) && parts[0] !== 'localhost') full = `docker.io/${name}`;
  if (/^docker\.io\/[^/]+$/.test(full)) full = `docker.io/library/${full.slice(10)}`;
  return `${full}:${tag ?? 'latest'}`;
}

export interface ContainerBodyInput {
  spec: InstanceSpec;
  agentUid: string;
  sshPort: number;
  /** Host port per published container port key ("8080/tcp"). */
  hostPorts: Record<string, number>;
  /** The storage driver accepts a size option: the disk is enforced. */
  diskQuota: boolean;
  /** The host address published ports bind to (the operator's SSH bind address; 0.0.0.0 unsaid). */
  hostIp?: string;
  /** The instance's volumes: each one's directory on the host and where the container sees it. */
  volumeMounts?: { source: string; target: string }[];
}

/**
 * The network every instance's container joins: a bridge with inter-container traffic off, so a
 * container reaches no other container on it, only the host's published ports and the outside.
 */
export const INSTANCE_NETWORK = 'openrig-instances';
export const INSTANCE_NETWORK_BODY = {
  Name: INSTANCE_NETWORK,
  Driver: 'bridge',
  CheckDuplicate: true,
  Options: { 'com.docker.network.bridge.enable_icc': 'false' },
  Labels: { 'openrig.network': 'instances' },
};

/**
 * Capabilities of Docker's default set a renter's root does without: raw and packet sockets
 * (NET_RAW: ARP and IP spoofing on the bridge, sniffing) and device nodes (MKNOD). What a shell,
 * a package manager and an image's own sshd use (CHOWN, SETUID, SETGID, SYS_CHROOT…) stays.
 */
export const DROPPED_CAPABILITIES = ['NET_RAW', 'MKNOD'];
/** Processes and threads a container may hold at once (a fork bomb stops there). */
export const PIDS_LIMIT = 8192;
/** The container log rotates: at most LOG_MAX_FILES files of LOG_MAX_SIZE each on the host. */
export const LOG_CONFIG = { Type: 'json-file', Config: { 'max-size': '20m', 'max-file': '3' } };

/** The exact Engine API body of `POST /containers/create` for an instance. */
export function containerCreateBody(i: ContainerBodyInput): Record<string, unknown> {
  const { spec } = i;
  const env: Record<string, string> = {
    ...spec.env,
    VAST_TCP_PORT_22: String(i.sshPort),
    OPENRIG_SSH_PORT: String(i.sshPort),
    ...(spec.publicHost ? { PUBLIC_IPADDR: spec.publicHost } : {}),
  };
  const bindings: Record<string, { HostIp: string; HostPort: string }[]> = {};
  const exposed: Record<string, Record<string, never>> = {};
  for (const [key, hostPort] of Object.entries(i.hostPorts)) {
    const [port, proto] = key.split('/');
    bindings[key] = [{ HostIp: i.hostIp ?? '0.0.0.0', HostPort: String(hostPort) }];
    exposed[key] = {};
    env[`VAST_${proto!.toUpperCase()}_PORT_${port}`] = String(hostPort);
    env[`OPENRIG_${proto!.toUpperCase()}_PORT_${port}`] = String(hostPort);
  }
  // Nothing of the host is mounted but the instance's own volumes (the agent's state stays out of
  // reach): each a directory of STATE_DIR/volumes/ID/data, read-write, no device files.
  const host: Record<string, unknown> = {
    Init: true,
    PortBindings: bindings,
    RestartPolicy: { Name: 'no' },
    NetworkMode: INSTANCE_NETWORK,
    CapDrop: DROPPED_CAPABILITIES,
    SecurityOpt: ['no-new-privileges'],
    PidsLimit: PIDS_LIMIT,
    LogConfig: LOG_CONFIG,
  };
  if (spec.limits) {
    host.NanoCpus = Math.round(spec.limits.cpus * 1e9);
    host.Memory = Math.round(spec.limits.memoryMb * 1024 * 1024);
    host.MemorySwap = host.Memory; // no swap on top of the offer's memory
  }
  if (spec.gpus && spec.gpus.length > 0) {
    host.DeviceRequests = [{ Driver: 'nvidia', DeviceIDs: spec.gpus, Capabilities: [['gpu']] }];
  }
  if (i.diskQuota && spec.disk > 0) host.StorageOpt = { size: `${spec.disk}G` };
  if (i.volumeMounts && i.volumeMounts.length > 0)
    host.Mounts = i.volumeMounts.map((m) => ({ Type: 'bind', Source: m.source, Target: m.target }));
  return {
    Image: spec.image,
    Hostname: `C.${spec.id}`,
    ...mainProcess(spec),
    Env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
    Labels: {
      [LABEL_INSTANCE]: String(spec.id),
      [LABEL_AGENT]: i.agentUid,
      [LABEL_SSH_PORT]: String(i.sshPort),
      [LABEL_GENERATION]: String(spec.generation ?? 1),
    },
    ExposedPorts: exposed,
    HostConfig: host,
  };
}

/** Published ports of a listed container as clients read them (the SSH port as 22/tcp). */
export function listedPorts(c: ContainerSummary, sshPort: number): PortMap {
  const out: PortMap = { '22/tcp': [{ HostIp: '0.0.0.0', HostPort: String(sshPort) }] };
  const seen = new Set<string>();
  for (const p of c.Ports ?? []) {
    if (!p.PublicPort) continue;
    const key = `${p.PrivatePort}/${p.Type}`;
    // One binding per port, the IPv4 one when there are two.
    if (seen.has(key) && p.IP?.includes(':')) continue;
    seen.add(key);
    out[key] = [{ HostIp: '0.0.0.0', HostPort: String(p.PublicPort) }];
  }
  return out;
}

/** A free TCP port on `host` (the kernel's choice; the engine or our SSH server binds it next). */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, host, () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

export interface DockerRuntimeOptions {
  stateDir: string;
  agentUid: string;
  sshBind: string;
  engine?: DockerEngine;
  log: { info(m: string): void; warn(m: string): void };
  /** Pull progress and other steps of a start, for the instance's status_msg. */
  onProgress?: (id: number, msg: string) => void;
  stopGraceS?: number;
  /** The control server that instance SSH servers ask for current keys (absent: synced file only). */
  keyCheck?: KeyCheck;
}

type SshServer = ReturnType<typeof createContainerSshServer>;

export class DockerRuntime implements Runtime {
  readonly name = 'docker' as const;
  readonly engine: DockerEngine;
  /** Whether `disk` is enforced (the storage driver takes a size option); set by init(). */
  diskQuota = false;
  private readonly ssh = new Map<number, { server: SshServer; port: number; ready: Promise<void> }>();

  /** Where volumes are kept: size-limited ext4 images once init() found the host can (volumes.ts). */
  volumes: VolumeStore;

  constructor(private readonly o: DockerRuntimeOptions) {
    this.engine = o.engine ?? new DockerEngine();
    this.volumes = new VolumeStore(o.stateDir, 'directory', o.log);
  }

  /** The instance's volumes as the container mounts them. */
  private volumeMounts(spec: InstanceSpec): { source: string; target: string }[] {
    return (spec.volumes ?? []).map((v) => ({ source: this.volumes.dataDir(v.id), target: v.mountPath }));
  }

  /** Checks the engine and the storage driver; says at agent start whether `disk` is enforced. */
  async init(): Promise<string> {
    const info = await this.engine.info();
    const backing = info.DriverStatus?.find(([k]) => k === 'Backing Filesystem')?.[1] ?? '';
    this.diskQuota =
      ['btrfs', 'zfs', 'devicemapper'].includes(info.Driver) ||
      (info.Driver === 'overlay2' && backing === 'xfs');
    this.volumes = await VolumeStore.open(this.o.stateDir, true, this.o.log);
    const volumes =
      this.volumes.method === 'ext4-loop'
        ? 'volumes are ext4 images of their size (size enforced)'
        : 'volumes are plain directories (size NOT enforced)';
    return this.diskQuota
      ? `disk enforced with the ${info.Driver} storage driver's size option; ${volumes}`
      : `disk is recorded, not enforced: the ${info.Driver} storage driver on ${backing || 'this filesystem'} has no size option (overlay2 needs xfs with pquota); ${volumes}`;
  }

  dir(id: number): string {
    return path.join(path.resolve(this.o.stateDir), 'containers', String(id));
  }

  private probeHost(): string {
    return this.o.sshBind === '0.0.0.0' || this.o.sshBind === '::' ? '127.0.0.1' : this.o.sshBind;
  }

  private network: Promise<void> | null = null;

  /** The instances' network exists (made once; a failure is tried again at the next create). */
  private ensureNetwork(): Promise<void> {
    this.network ??= this.engine.ensureNetwork(INSTANCE_NETWORK_BODY).catch((err: Error) => {
      this.network = null;
      throw new Error(`cannot make the instances' network ${INSTANCE_NETWORK}: ${err.message}`);
    });
    return this.network;
  }

  async prepare(spec: InstanceSpec): Promise<void> {
    const d = this.dir(spec.id);
    mkdirSync(d, { recursive: true, mode: 0o700 });
    const hostKey = path.join(d, 'ssh_host_ed25519_key');
    if (!existsSync(hostKey)) writeFileSync(hostKey, ed25519KeyPair().private, { mode: 0o600 });
    await this.updateKeys(spec.id, spec.authorizedKeys);
    await this.authorisedImage(spec);
    // Its volumes exist and are mounted on the host (made on first use, mounted again after a reboot).
    for (const v of spec.volumes ?? []) await this.volumes.ensure(v.id, v.sizeGb);
  }

  private privateRec: { ids: Set<string>; refs: Set<string> } | null = null;

  private privateFile(): string {
    return path.join(path.resolve(this.o.stateDir), 'private-images.json');
  }

  /** The images pulled with credentials, by id and by reference (kept across agent restarts). */
  private privateImages(): { ids: Set<string>; refs: Set<string> } {
    if (!this.privateRec) {
      try {
        const j = JSON.parse(readFileSync(this.privateFile(), 'utf8')) as { ids?: string[]; refs?: string[] };
        this.privateRec = { ids: new Set(j.ids ?? []), refs: new Set(j.refs ?? []) };
      } catch {
        this.privateRec = { ids: new Set(), refs: new Set() };
      }
    }
    return this.privateRec;
  }

  private markPrivate(imageId: string, ref: string): void {
    const p = this.privateImages();
    const key = imageKey(ref);
    if (p.ids.has(imageId) && (key === null || p.refs.has(key))) return;
    p.ids.add(imageId);
    if (key !== null) p.refs.add(key);
    const file = this.privateFile();
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    writeFileSync(`${file}.tmp`, JSON.stringify({ ids: [...p.ids], refs: [...p.refs] }), { mode: 0o600 });
    renameSync(`${file}.tmp`, file);
  }

  /**
   * Whether the local image `ref` names (id `localId`) is one only a renter with credentials may
   * use: it was pulled with credentials under that reference, or it is such an image named some
   * other way (by id or digest) than by a tag of it that was never pulled with credentials.
   */
  private isPrivate(ref: string, local: { Id: string; RepoTags?: string[] | null }): boolean {
    const p = this.privateImages();
    const key = imageKey(ref);
    if (key !== null && p.refs.has(key)) return true;
    if (!p.ids.has(local.Id)) return false;
    const tags = (local.RepoTags ?? []).map(imageKey);
    return key === null || !tags.includes(key);
  }

  /**
   * The instance's image is here and the instance may use it. A missing image is pulled. An image
   * this host ever pulled with credentials is private: a local copy proves nothing about this
   * instance's renter, so it is pulled again with this instance's own credentials (or none), and
   * the registry decides; a refusal fails the start. An instance that brings credentials always
   * pulls with them, so the image it gets is recorded private.
   */
  private async authorisedImage(spec: InstanceSpec): Promise<void> {
    const auth = parseImageLogin(spec.imageLogin, spec.image);
    const local = await this.engine.image(spec.image);
    const isPrivate = local !== null && this.isPrivate(spec.image, local);
    if (local !== null && !isPrivate && !auth) return;
    this.o.onProgress?.(spec.id, `pulling ${spec.image}`);
    try {
      await this.pullWithProgress(spec, auth);
    } catch (err) {
      if (isPrivate)
        throw new Error(
          `${spec.image} is a private image: its registry must accept this instance's image_login (${(err as Error).message})`,
        );
      throw err;
    }
    const id = await this.engine.imageId(spec.image);
    if (id === null) throw new Error(`pulling ${spec.image} did not produce the image`);
    if (auth) this.markPrivate(id, spec.image);
  }

  /** Creates the container (a fresh one: host ports and SSH port chosen now). */
  private async create(spec: InstanceSpec): Promise<void> {
    const bind = this.o.sshBind;
    const sshPort = await freePort(bind);
    const hostPorts: Record<string, number> = {};
    for (const p of spec.ports ?? []) hostPorts[`${p.container}/${p.proto}`] = await freePort(bind);
    await this.ensureNetwork();
    const body = containerCreateBody({
      spec,
      agentUid: this.o.agentUid,
      sshPort,
      hostPorts,
      diskQuota: this.diskQuota,
      hostIp: bind,
      volumeMounts: this.volumeMounts(spec),
    });
    await this.engine.create(containerName(spec.id), body);
  }

  async start(spec: InstanceSpec): Promise<{ sshPort: number }> {
    await this.prepare(spec);
    let c = await this.engine.inspect(containerName(spec.id));
    if (c && c.Config?.Labels?.[LABEL_AGENT] !== this.o.agentUid)
      throw new Error(`a container named ${containerName(spec.id)} exists that this agent did not create`);
    if (!c) {
      this.o.onProgress?.(spec.id, 'creating the container');
      await this.create(spec);
      c = await this.engine.inspect(containerName(spec.id));
    }
    rmSync(path.join(this.dir(spec.id), 'stopped'), { force: true });
    if (!c?.State?.Running) await this.engine.start(containerName(spec.id));
    const st = await this.inspect(spec.id);
    if (st.state !== 'running')
      throw new Error(st.state === 'exited' ? st.msg : `the container is ${st.state}`);
    return { sshPort: st.sshPort };
  }

  /** The instance's SSH server, listening (started on first need: a start, or a re-adoption). */
  private async ensureSsh(id: number, port: number): Promise<void> {
    const cur = this.ssh.get(id);
    if (cur) return cur.ready;
    const d = this.dir(id);
    const keyFile = path.join(d, 'ssh_host_ed25519_key');
    if (!existsSync(keyFile)) {
      mkdirSync(d, { recursive: true, mode: 0o700 });
      writeFileSync(keyFile, ed25519KeyPair().private, { mode: 0o600 });
    }
    const server = createContainerSshServer({
      engine: this.engine,
      container: containerName(id),
      hostKey: readFileSync(keyFile),
      authorizedKeysFile: path.join(d, 'authorized_keys'),
      spoolDir: d,
      currentKeys: this.o.keyCheck
        ? serverKeys(id, this.o.keyCheck, (m) => this.o.log.warn(`instance ${id}: ${m}`))
        : undefined,
      // rsync's daemon protocol for `vastai_kaalia` logins (copies), in the container's root.
      instanceId: id,
      copyGrant: this.o.keyCheck
        ? serverCopyGrant(id, this.o.keyCheck, (m) => this.o.log.warn(`instance ${id}: ${m}`))
        : undefined,
      log: (m) => this.o.log.warn(`instance ${id}: ${m}`),
    });
    const ready = new Promise<void>((resolve, reject) => {
      server.once('error', (err: Error) => {
        this.ssh.delete(id);
        reject(new Error(`the SSH server cannot listen on ${this.o.sshBind}:${port}: ${err.message}`));
      });
      server.listen(port, this.o.sshBind, () => resolve());
    });
    this.ssh.set(id, { server, port, ready });
    return ready;
  }

  private closeSsh(id: number): void {
    const cur = this.ssh.get(id);
    if (!cur) return;
    this.ssh.delete(id);
    cur.server.close();
  }

  async stop(id: number, graceS?: number): Promise<void> {
    const d = this.dir(id);
    if (existsSync(d)) writeFileSync(path.join(d, 'stopped'), '');
    this.closeSsh(id);
    try {
      await this.engine.stop(
        containerName(id),
        graceS !== undefined ? Math.ceil(graceS) : (this.o.stopGraceS ?? 10),
      );
    } catch (err) {
      if (!(err instanceof EngineError) || (err.status !== 404 && err.status !== 304)) throw err;
    }
  }

  async destroy(id: number): Promise<void> {
    this.closeSsh(id);
    await this.engine.remove(containerName(id));
    rmSync(this.dir(id), { recursive: true, force: true });
  }

  async inspect(id: number): Promise<ObservedState> {
    // A running container is read from the engine's listing, which takes no container lock: a
    // renter's copy into or out of their container holds its lock for as long as it streams, and
    // the heartbeat must not wait for it. Any other state is inspected for its details.
    const listed = (
      await this.engine.listByLabel([`${LABEL_INSTANCE}=${id}`, `${LABEL_AGENT}=${this.o.agentUid}`])
    ).find((x) => x.Names.includes(`/${containerName(id)}`));
    if (listed?.State === 'running') {
      const port = Number(listed.Labels[LABEL_SSH_PORT]);
      const generation = Number(listed.Labels[LABEL_GENERATION]) || 1;
      try {
        await this.ensureSsh(id, port);
      } catch (err) {
        return { state: 'exited', msg: (err as Error).message, generation };
      }
      return { state: 'running', sshPort: port, ports: listedPorts(listed, port), generation };
    }
    const c = await this.engine.inspect(containerName(id));
    if (!c || c.Config?.Labels?.[LABEL_AGENT] !== this.o.agentUid) {
      this.closeSsh(id);
      return { state: 'absent' };
    }
    const s = c.State ?? {};
    const generation = Number(c.Config?.Labels?.[LABEL_GENERATION]) || 1;
    if (s.Running && !s.Paused && !s.Restarting) {
      const port = Number(c.Config?.Labels?.[LABEL_SSH_PORT]);
      try {
        await this.ensureSsh(id, port);
      } catch (err) {
        return { state: 'exited', msg: (err as Error).message, generation };
      }
      return { state: 'running', sshPort: port, ports: this.portsOf(c, port), generation };
    }
    if (s.Running || s.Restarting) return { state: 'starting', generation };
    this.closeSsh(id);
    if (s.Status === 'created' || existsSync(path.join(this.dir(id), 'stopped')))
      return { state: 'stopped', generation };
    const why = s.OOMKilled ? 'out of memory' : s.Error ? s.Error : `exit code ${s.ExitCode}`;
    return { state: 'exited', msg: `container exited (${why})`, generation };
  }

  /**
   * A gateway stream goes to the container's own address on the instances' network (the host
   * reaches it; no port needs publishing), or, failing that, to the port published for it.
   */
  async gatewayTarget(id: number, port: number): Promise<{ host: string; port: number } | null> {
    const c = await this.engine.inspect(containerName(id));
    if (!c || c.Config?.Labels?.[LABEL_AGENT] !== this.o.agentUid || !c.State?.Running) return null;
    const ip = c.NetworkSettings?.Networks?.[INSTANCE_NETWORK]?.IPAddress;
    if (ip) return { host: ip, port };
    const bound = c.NetworkSettings?.Ports?.[`${port}/tcp`]?.[0];
    if (!bound) return null;
    const host =
      !bound.HostIp || bound.HostIp === '0.0.0.0'
        ? '127.0.0.1'
        : bound.HostIp === '::'
          ? '::1'
          : bound.HostIp;
    return { host, port: Number(bound.HostPort) };
  }

  private portsOf(c: ContainerInspect, sshPort: number): PortMap {
    const out: PortMap = { '22/tcp': [{ HostIp: '0.0.0.0', HostPort: String(sshPort) }] };
    const bound = (c.NetworkSettings?.Ports ?? {}) as Record<
      string,
      { HostIp: string; HostPort: string }[] | null
    >;
    for (const [k, v] of Object.entries(bound)) {
      const b = v?.find((x) => x.HostIp === '0.0.0.0') ?? v?.[0];
      if (b) out[k] = [{ HostIp: '0.0.0.0', HostPort: b.HostPort }];
    }
    return out;
  }

  async updateKeys(id: number, keys: string[]): Promise<void> {
    const d = this.dir(id);
    mkdirSync(d, { recursive: true, mode: 0o700 });
    const file = path.join(d, 'authorized_keys');
    const text = keys.map((k) => k.trim()).join('\n') + (keys.length ? '\n' : '');
    try {
      if (readFileSync(file, 'utf8') === text) return;
    } catch {
      /* first time */
    }
    writeFileSync(`${file}.tmp`, text, { mode: 0o600 });
    renameSync(`${file}.tmp`, file); // the SSH server re-reads it at every login attempt
  }

  async list(): Promise<number[]> {
    const cs = await this.engine.listByLabel(`${LABEL_AGENT}=${this.o.agentUid}`);
    return cs
      .map((c) => Number(c.Labels[LABEL_INSTANCE]))
      .filter((n) => Number.isInteger(n) && n > 0)
      .sort((a, b) => a - b);
  }

  async logs(id: number, tail: number | null): Promise<string> {
    return this.engine.logs(containerName(id), tail ?? LOGS_MAX_LINES, LOGS_MAX_BYTES);
  }

  async reboot(spec: InstanceSpec): Promise<void> {
    await this.engine.restart(containerName(spec.id), this.o.stopGraceS ?? 10);
  }

  /** Pulls the instance's image, its progress (in MB, at most twice a second) as its status. */
  private async pullWithProgress(
    spec: InstanceSpec,
    auth: ReturnType<typeof parseImageLogin>,
  ): Promise<void> {
    const mb = (n: number) => Math.round(n / 1e6);
    let last = 0;
    await this.engine.pull(spec.image, auth, (done, total) => {
      if (Date.now() - last < 500 && done < total) return;
      last = Date.now();
      this.o.onProgress?.(spec.id, `pulling ${spec.image}: ${mb(done)}/${mb(total)} MB`);
    });
  }

  /** Pulls the image again and recreates the container on the same SSH and published ports. */
  async recycle(spec: InstanceSpec): Promise<void> {
    const auth = parseImageLogin(spec.imageLogin, spec.image);
    try {
      await this.pullWithProgress(spec, auth);
    } catch (err) {
      // An image no registry serves (built on this host) is recreated from the local copy; a
      // private one only when its registry accepts this instance's credentials.
      const local = await this.engine.image(spec.image);
      if (local === null || this.isPrivate(spec.image, local)) throw err;
      this.o.log.warn(`instance ${spec.id}: recycle uses the local ${spec.image}: ${(err as Error).message}`);
    }
    if (auth) {
      const id = await this.engine.imageId(spec.image);
      if (id !== null) this.markPrivate(id, spec.image);
    }
    await this.replace(spec, true);
  }

  /**
   * An update: the image is pulled when missing (as for a start), then the container is replaced
   * by one of the new configuration, its writable layer (the disk) starting afresh. Nothing is
   * removed before the image is there, so a failed pull leaves the old container as it was.
   */
  async recreate(spec: InstanceSpec, opts: { start: boolean }): Promise<void> {
    await this.prepare(spec);
    await this.replace(spec, opts.start);
  }

  /**
   * Removes the instance's container (if any) and creates it afresh from `spec`, on the same SSH
   * port and the same host ports for the container ports the spec still publishes (new ones get
   * free ports); started when `start`, else left as created (stopped).
   */
  private async replace(spec: InstanceSpec, start: boolean): Promise<void> {
    const c = await this.engine.inspect(containerName(spec.id));
    if (c && c.Config?.Labels?.[LABEL_AGENT] !== this.o.agentUid)
      throw new Error(`a container named ${containerName(spec.id)} exists that this agent did not create`);
    const sshPort = Number(c?.Config?.Labels?.[LABEL_SSH_PORT]) || (await freePort(this.o.sshBind));
    const hostPorts: Record<string, number> = {};
    for (const p of spec.ports ?? []) {
      const key = `${p.container}/${p.proto}`;
      hostPorts[key] =
        Number(c?.HostConfig?.PortBindings?.[key]?.[0]?.HostPort) || (await freePort(this.o.sshBind));
    }
    this.o.onProgress?.(spec.id, 'creating the container');
    this.closeSsh(spec.id);
    await this.ensureNetwork();
    await this.engine.remove(containerName(spec.id));
    const body = containerCreateBody({
      spec,
      agentUid: this.o.agentUid,
      sshPort,
      hostPorts,
      diskQuota: this.diskQuota,
      hostIp: this.o.sshBind,
      volumeMounts: this.volumeMounts(spec),
    });
    await this.engine.create(containerName(spec.id), body);
    const stopped = path.join(this.dir(spec.id), 'stopped');
    if (!start) {
      mkdirSync(this.dir(spec.id), { recursive: true, mode: 0o700 });
      writeFileSync(stopped, '');
      return;
    }
    rmSync(stopped, { force: true });
    await this.engine.start(containerName(spec.id));
    await this.inspect(spec.id); // its SSH server listens again
  }

  /**
   * The container's writable layer (the engine's SizeRw) plus the volumes its image declares
   * (anonymous ones the engine made for it, removed with it), walked where the agent can read
   * them. The runtime itself mounts nothing into a container. The engine leaves SizeRw out when it
   * could not measure the layer: that is no measurement (it throws, and the last one stands), not
   * an empty disk.
   */
  /** The container's root as its main process sees it (/proc/PID/root), while it runs. */
  async fileRoot(id: number): Promise<string | null> {
    return containerRoot(this.engine, containerName(id)).catch(() => null);
  }

  async diskUsage(id: number): Promise<DiskUsage | null> {
    const c = await this.engine.inspect(containerName(id), { size: true });
    if (!c || c.Config?.Labels?.[LABEL_AGENT] !== this.o.agentUid) return null;
    if (typeof c.SizeRw !== 'number')
      throw new Error("the engine did not report the size of the container's writable layer");
    let bytes = Math.max(0, c.SizeRw);
    let partial: string | undefined;
    for (const m of c.Mounts ?? []) {
      if (m.Type !== 'volume' || !m.Source) continue;
      try {
        const v = await dirSize(m.Source);
        bytes += v?.bytes ?? 0;
        if (v?.partial) partial ??= `the volume at ${m.Destination}: ${v.partial}`;
      } catch (err) {
        partial ??= `the volume at ${m.Destination} is unreadable here (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`;
      }
    }
    return partial === undefined ? { bytes } : { bytes, partial };
  }

  async execute(id: number, argv: string[]): Promise<string> {
    const r = await runInContainer(this.engine, containerName(id), argv);
    return r.stdout + r.stderr + (r.code === 0 ? '' : `(exit code ${r.code})\n`);
  }

  /** Closes the SSH servers (the containers keep running for the next agent to re-adopt). */
  async close(): Promise<void> {
    for (const id of [...this.ssh.keys()]) this.closeSsh(id);
    await this.engine.close();
  }
}
