/**
 * Builds mpirun command lines for the reproducers, per MPI flavour, from data (never a shell string):
 * Open MPI `mpirun [--allow-run-as-root] [--oversubscribe] [--mca K V]... [-x NAME=value]... [extra] -np N prog...`,
 * MPICH Hydra `mpirun.mpich [-genv NAME value]... [extra] -np N prog...`.
 */
import { execute } from '../proc';

/** Which launcher dialect. */
export type MpiFlavor = 'openmpi' | 'mpich';

/** Everything that goes into one launch except the program. */
export interface LaunchSpec {
	flavor: MpiFlavor;
	/** Path or name of mpirun. */
	mpirun: string;
	np: number;
	/** Environment presets handed to every rank, e.g. ["UCX_TLS", "^cuda_ipc"]. */
	env: Array<[string, string]>;
	/** Open MPI MCA parameters, e.g. ["btl_smcuda_use_cuda_ipc", "0"]. Refused for MPICH. */
	mca: Array<[string, string]>;
	/** Extra launcher argv items, passed verbatim before -np (e.g. ["--host", "a:2,b:2"]). */
	extraArgs: string[];
	/** Open MPI: add --mca btl_tcp_if_include lo (keep TCP on loopback). */
	loopbackOnly: boolean;
	/** Open MPI: add --allow-run-as-root (default: when running as root). */
	allowRunAsRoot: boolean;
	/** Open MPI: add --oversubscribe (more ranks than cores). */
	oversubscribe: boolean;
}

/** A named launcher configuration (e.g. "ucx, UCX_TLS=^cuda_ipc"). */
export interface LaunchConfig {
	label: string;
	env: Array<[string, string]>;
	mca: Array<[string, string]>;
	extraArgs: string[];
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const MCA_NAME = /^[A-Za-z0-9_]+$/;

/** "NAME=value" → [NAME, value]; null when NAME is not a valid environment name. */
export function parsePreset(text: string): [string, string] | null {
	const eq = text.indexOf('=');
	if (eq <= 0) { return null; }
	const name = text.slice(0, eq);
	return ENV_NAME.test(name) ? [name, text.slice(eq + 1)] : null;
}

/** Default spec for a flavour: root handling from the current uid, oversubscribe on for Open MPI. */
export function defaultSpec(flavor: MpiFlavor, mpirun: string, np: number): LaunchSpec {
	const root = typeof process.getuid === 'function' && process.getuid() === 0;
	return { flavor, mpirun, np, env: [], mca: [], extraArgs: [], loopbackOnly: false, allowRunAsRoot: root, oversubscribe: flavor === 'openmpi' };
}

/** Apply a named configuration on top of a spec. */
export function withConfig(spec: LaunchSpec, config: LaunchConfig): LaunchSpec {
	return { ...spec, env: [...spec.env, ...config.env], mca: [...spec.mca, ...config.mca], extraArgs: [...spec.extraArgs, ...config.extraArgs] };
}

/** The full argv. Throws Error with a clear message on invalid data (bad names, MCA with MPICH, np < 1). */
export function buildMpirunArgv(spec: LaunchSpec, program: readonly string[]): string[] {
	if (!Number.isInteger(spec.np) || spec.np < 1 || spec.np > 4096) { throw new Error(`bad rank count ${spec.np}`); }
	if (program.length === 0) { throw new Error('no program to launch'); }
	for (const [name] of spec.env) {
		if (!ENV_NAME.test(name)) { throw new Error(`bad environment variable name ${JSON.stringify(name)}`); }
	}
	for (const [name] of spec.mca) {
		if (!MCA_NAME.test(name)) { throw new Error(`bad MCA parameter name ${JSON.stringify(name)}`); }
	}
	const argv = [spec.mpirun];
	if (spec.flavor === 'openmpi') {
		if (spec.allowRunAsRoot) { argv.push('--allow-run-as-root'); }
		if (spec.oversubscribe) { argv.push('--oversubscribe'); }
		if (spec.loopbackOnly) { argv.push('--mca', 'btl_tcp_if_include', 'lo'); }
		for (const [k, v] of spec.mca) { argv.push('--mca', k, v); }
		for (const [k, v] of spec.env) { argv.push('-x', `${k}=${v}`); }
	} else {
		if (spec.mca.length > 0) { throw new Error(`MCA parameters (${spec.mca.map(m => m[0]).join(', ')}) are Open MPI only; this launcher is MPICH`); }
		for (const [k, v] of spec.env) { argv.push('-genv', k, v); }
	}
	argv.push(...spec.extraArgs, '-np', String(spec.np), ...program);
	return argv;
}

/** Flavour from the launcher's name, or from `mpirun --version` ("Open MPI" / "open-mpi" / "HYDRA"). */
export async function detectFlavor(mpirun: string, timeoutMs = 15000): Promise<MpiFlavor | null> {
	const base = mpirun.split('/').pop() ?? mpirun;
	if (/mpich|hydra/i.test(base)) { return 'mpich'; }
	if (/openmpi|prterun|orterun/i.test(base)) { return 'openmpi'; }
	const r = await execute([mpirun, '--version'], { timeoutMs }).result;
	const text = r.stdout + r.stderr;
	if (/Open MPI|open-mpi|OpenRTE|PRRTE/i.test(text)) { return 'openmpi'; }
	if (/HYDRA|MPICH/i.test(text)) { return 'mpich'; }
	return null;
}

/** Environment for UCX evidence: lanes always, protocol tables when asked (UCX 1.13 needs UCX_PROTO_ENABLE=y too). */
export function evidenceEnv(protoInfo: boolean): Array<[string, string]> {
	const env: Array<[string, string]> = [['UCX_LOG_LEVEL', 'info']];
	if (protoInfo) { env.push(['UCX_PROTO_INFO', 'y'], ['UCX_PROTO_ENABLE', 'y']); }
	return env;
}

/** Open MPI: print which btl carries each peer ("mca: bml: Using smcuda btl for send to … on node …"). */
export const OB1_EVIDENCE_MCA: Array<[string, string]> = [['btl_base_verbose', '100']];

/** The evidence switches for one run: UCX info lines always; Open MPI btl selection lines too. */
export function withEvidence(config: LaunchConfig, flavor: MpiFlavor, protoInfo: boolean): LaunchConfig {
	return {
		...config,
		env: [...evidenceEnv(protoInfo), ...config.env],
		mca: flavor === 'openmpi' ? [...OB1_EVIDENCE_MCA, ...config.mca] : config.mca,
	};
}

/** Open MPI: choose pml ucx with every transport/device allowed (Debian disables pml ucx by default). */
export const PML_UCX_MCA: Array<[string, string]> = [['pml', 'ucx'], ['pml_ucx_tls', 'any'], ['pml_ucx_devices', 'any']];
