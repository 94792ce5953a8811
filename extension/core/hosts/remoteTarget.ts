/**
 * What an inspection of an ssh host needs besides the SshHost: the engine on that host (an explicit path, or
 * deployed and built there by deployEngine) and a probe that says the in-process addon cannot probe a remote host.
 * Shared by the CLI (`--host`) and VS Code (inspectionService.ts), and under every launch on a host (launchTarget.ts).
 */
import * as os from 'node:os';
import * as path from 'node:path';
import { repoRoot, type EngineLocator, type ProbeOutcome } from '../native';
import { deployEngine, type DeployResult } from './deployEngine';
import type { SrunSpec } from '../launch/launchSpec';
import type { HostConnectResult } from '../host';
import type { HostSetting } from './hostSettings';
import { SshHost } from './sshHost';

/** A remote host ready for `inspectHost`. */
export interface RemoteTarget {
	host: SshHost;
	/** Engine path on the host ("" when none: then `locateEngine` says why). */
	enginePath: string;
	mpirunPath: string;
	locateEngine: EngineLocator;
	probe: () => Promise<ProbeOutcome>;
	/** The deploy outcome when the engine was deployed (for messages). */
	deploy?: DeployResult;
	/** srun launch options when the host's launcher is srun (null: mpirun). */
	srun: Omit<SrunSpec, 'jobName'> | null;
	close(): Promise<void>;
}

/** Options for `openRemoteTarget`. */
export interface RemoteTargetOptions {
	configFile?: string;
	controlDir?: string;
	connectTimeoutSeconds?: number;
	/** Local native/ folder to deploy from; default the extension's own. */
	nativeDir?: string;
	cacheRoot?: string;
	/** Cancels connecting and deploying (a build in progress is killed on the host). */
	signal?: AbortSignal;
	onProgress?(message: string): void;
}

/** Connect to `setting`'s host and get its engine ready (deploying it when no enginePath is set). */
export async function openRemoteTarget(setting: HostSetting, opts: RemoteTargetOptions = {}): Promise<RemoteTarget> {
	const host = new SshHost({
		name: setting.name, destination: setting.sshHost, setup: setting.setup,
		configFile: opts.configFile, controlDir: opts.controlDir, connectTimeoutSeconds: opts.connectTimeoutSeconds,
	});
	const probe = async (): Promise<ProbeOutcome> => ({ error: `the native addon probe runs only on the local machine, not on ${host.ref.label}`, tried: [] });
	const srun = setting.launcher === 'srun' ? { srun: 'srun', mpi: setting.srunMpi || null, allocation: [...setting.srunArgs] } : null;
	const base = { host, mpirunPath: setting.mpirun, probe, srun, close: () => host.close() };
	if (setting.enginePath) {
		return { ...base, enginePath: setting.enginePath, locateEngine: () => ({ path: setting.enginePath, tried: [setting.enginePath] }) };
	}
	const conn = await host.connect();
	if (!conn.ok) {
		return { ...base, enginePath: '', locateEngine: () => ({ path: null, tried: [`(not deployed: ${conn.error})`] }) };
	}
	const root = repoRoot();
	const nativeDir = opts.nativeDir ?? (root ? path.join(root, 'native') : '');
	const mpicc = setting.mpirun && setting.mpirun.endsWith('mpirun.openmpi') ? 'mpicc.openmpi'
		: setting.mpirun && setting.mpirun.endsWith('mpirun.mpich') ? 'mpicc.mpich' : undefined;
	const deploy = nativeDir
		? await deployEngine(host, { nativeDir, mpicc, cacheRoot: opts.cacheRoot, signal: opts.signal, onProgress: opts.onProgress })
		: { ok: false as const, error: 'the native sources (native/) of gpumpi-doctor were not found', lines: [] };
	if (deploy.ok) {
		return { ...base, enginePath: deploy.enginePath, deploy, locateEngine: () => ({ path: deploy.enginePath, tried: [deploy.enginePath] }) };
	}
	const why = `(deploy failed: ${deploy.error}${deploy.lines.length ? `: ${deploy.lines.slice(0, 5).join(' | ')}` : ''})`;
	return { ...base, enginePath: '', deploy, locateEngine: () => ({ path: null, tried: [why] }) };
}

/**
 * "Test Connection": connect to `setting`'s host the way every inspection does (BatchMode, strict host keys) and
 * disconnect. Its own socket directory, so it never reuses, nor closes, the shared connection of a running inspection.
 */
export async function testConnection(setting: HostSetting, opts: Pick<RemoteTargetOptions, 'configFile' | 'connectTimeoutSeconds'> & { controlDir?: string } = {}): Promise<HostConnectResult> {
	const uid = typeof process.getuid === 'function' ? process.getuid() : 0;
	const host = new SshHost({
		name: setting.name, destination: setting.sshHost, configFile: opts.configFile, connectTimeoutSeconds: opts.connectTimeoutSeconds,
		controlDir: opts.controlDir ?? path.join(os.tmpdir(), `gpumpi-ssh-${uid}-test`),
	});
	try { return await host.connect(); } finally { await host.close(); }
}
