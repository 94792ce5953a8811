/**
 * Where and how the reproducers and the map launch: this machine or an ssh host (engine deployed and built there),
 * mpirun (flavour detected on that host) or Slurm's srun, an explicit host list. One resolver shared by the CLI
 * (`repro`/`map --host`) and the VS Code commands (a host picked in the Hosts view), so both launch the same way.
 */
import { engineBuildOf, findEngineFor } from '../native';
import { defaultSpec, type LaunchSpec, type MpiFlavor, type SrunSpec } from '../launch/launchSpec';
import { detectFlavor } from '../launch/runLaunch';
import type { Host } from '../host';
import type { HostSetting } from './hostSettings';
import { LocalHost } from './localHost';
import { mpiFlavorOfSoname, parseLinkOrder } from '../parsers/linkOrder';
import { openRemoteTarget, type RemoteTargetOptions } from './remoteTarget';

/** What the caller wants. */
export interface LaunchTargetRequest {
	/** The ssh host to launch on; null: this machine. */
	host: HostSetting | null;
	/** mpirun path or name; "" → the host setting's, else "mpirun". */
	mpirun: string;
	/** Skip detection (needed under srun when the host has no mpirun to ask). */
	flavor: MpiFlavor | null;
	/** Engine path on the target; null → the deployed one (ssh) or the local build. */
	engine: string | null;
	/** Launch through srun instead of mpirun (a host setting's launcher "srun" asks for it too). */
	srun: Omit<SrunSpec, 'jobName'> | null;
	/** Explicit hosts for the launcher, e.g. "a:2,b:2" (Open MPI --host, MPICH -hosts, srun --nodelist). */
	hostList: string | null;
	np: number;
	/** ssh options and deploy progress. */
	remote?: RemoteTargetOptions;
}

/**
 * A resolved target: run a use case on it (`host`, `engine`, `spec` + a config), then `close()`. `engineDeployed`:
 * the engine was deployed and built on the ssh host by hosts/deployEngine.ts (not given, not found here), so its
 * build folder can build more of the product there (the guard library).
 */
export type LaunchTarget =
	| { ok: true; host: Host; label: string; engine: string; engineDeployed: boolean; flavor: MpiFlavor; spec: LaunchSpec; notes: string[]; close(): Promise<void> }
	| { ok: false; error: string; notes: string[] };

/** A target that resolved. */
export type OpenLaunchTarget = Extract<LaunchTarget, { ok: true }>;

const HOST_LIST = /^[A-Za-z0-9][A-Za-z0-9._-]*(:\d{1,4})?(,[A-Za-z0-9][A-Za-z0-9._-]*(:\d{1,4})?)*$/;

/** The launcher argv items for an explicit host list (throws on a malformed list). */
export function hostListArgs(list: string, flavor: MpiFlavor, srun: boolean): string[] {
	if (!HOST_LIST.test(list)) { throw new Error(`host list ${JSON.stringify(list.slice(0, 80))} must look like a:2,b:2 or a,b`); }
	if (srun) { return [`--nodelist=${list.split(',').map(h => h.replace(/:\d+$/, '')).join(',')}`]; }
	return flavor === 'openmpi' ? ['--host', list] : ['-hosts', list];
}

const FLAVOR_NAME: Record<MpiFlavor, string> = { openmpi: 'Open MPI', mpich: 'MPICH' };

/**
 * The engine found is the default build (the `mpicc` on PATH), none having been built for `flavor`: read which MPI it
 * links (`readelf -d`, its NEEDED libmpi entry). Another MPI's engine would not join the launcher's job (an MPICH
 * launcher starts an Open MPI engine as separate one-rank jobs): that is the error returned, before anything is
 * launched. Otherwise a note says which build is used and what was read of it.
 */
async function defaultEngineCheck(host: Host, engine: string, flavor: MpiFlavor, notes: string[]): Promise<string | null> {
	const built = `no engine built for ${FLAVOR_NAME[flavor]} was found, so the default build ${engine} (built with the mpicc on PATH) is used`;
	const r = await host.run(['readelf', '-d', engine], { timeoutMs: 15_000 });
	const links = r.exitCode === 0 ? parseLinkOrder(r.stdout, '', `readelf -d ${engine}`).mpi : null;
	if (!links) {
		const why = r.exitCode === 0 ? 'readelf -d lists no libmpi / libmpich' : `readelf -d could not read it: ${(r.error ?? r.stderr.trim()) || `exit ${r.exitCode}`}`;
		notes.push(`${built}; which MPI it links is unknown (${why})`);
		return null;
	}
	const theirs = mpiFlavorOfSoname(links.soname);
	if (theirs !== null && theirs !== flavor) {
		const build = engineBuildOf(flavor);
		return `${built}, but it links ${links.soname} (${FLAVOR_NAME[theirs]}'s; readelf: "${links.evidence.line.trim()}"): the ${FLAVOR_NAME[flavor]} launcher would start it as separate one-rank jobs. Build the engine for ${FLAVOR_NAME[flavor]} (npm run build:native -- --all-mpis builds native/build/${build.dir} where ${build.mpicc} is on PATH) or give --engine`;
	}
	notes.push(`${built}; it links ${links.soname}${theirs ? ` (${FLAVOR_NAME[theirs]}'s)` : ''}`);
	return null;
}

/** Resolve the request; never throws for ordinary failures (unreachable host, failed deploy, unknown MPI). */
export async function resolveLaunchTarget(req: LaunchTargetRequest): Promise<LaunchTarget> {
	const notes: string[] = [];
	let host: Host = new LocalHost();
	let label = 'this machine';
	let deployedEngine: string | null = null;
	let deployed = false;
	let close = async (): Promise<void> => undefined;
	const fail = async (error: string): Promise<LaunchTarget> => { await close(); return { ok: false, error, notes }; };
	let srun = req.srun;
	const mpirun = req.mpirun || req.host?.mpirun || 'mpirun';
	if (req.host) {
		const remote = await openRemoteTarget(req.host, req.remote);
		host = remote.host;
		label = remote.host.ref.label;
		close = () => remote.close();
		srun ??= remote.srun;
		if (remote.deploy && !remote.deploy.ok) {
			notes.push(`engine deploy on ${label} failed: ${remote.deploy.error}`, ...remote.deploy.lines.slice(0, 20));
		}
		deployedEngine = remote.enginePath || null;
		deployed = remote.deploy?.ok === true;
		const conn = await remote.host.connect();
		if (!conn.ok) { return fail(`cannot reach ${label}: ${conn.error}`); }
	}
	const flavor = req.flavor ?? await detectFlavor(mpirun, 15_000, host);
	if (!flavor) {
		return fail(`cannot tell whether ${mpirun} on ${label} is Open MPI or MPICH (is it on PATH after the setup line? give the flavour${srun ? ', which srun needs to pass MCA parameters' : ''})`);
	}
	let engine = req.engine ?? deployedEngine;
	if (!engine && !req.host) {
		const loc = findEngineFor(flavor);
		engine = loc.path;
		if (!engine) { return fail(`no gpumpi engine found; tried: ${loc.tried.join(', ')} (build it: npm run build:native)`); }
		if (loc.defaultInsteadOf) {
			const mismatch = await defaultEngineCheck(host, engine, flavor, notes);
			if (mismatch) { return fail(mismatch); }
		}
	}
	if (!engine) { return fail(`no gpumpi engine on ${label}: ${notes[0] ?? 'it was not deployed'}`); }
	const spec: LaunchSpec = { ...defaultSpec(flavor, mpirun, req.np), srun: srun ? { ...srun, jobName: '' } : null };
	if (req.hostList) {
		try { spec.extraArgs = hostListArgs(req.hostList, flavor, srun !== null); } catch (e) { return fail((e as Error).message); }
	}
	if (req.host && flavor === 'openmpi' && !srun) {
		// Remote: the identity that runs mpirun is whatever the ssh user is; decide from that host, not from here.
		const id = await host.identity();
		spec.allowRunAsRoot = id.uid === 0;
	}
	return { ok: true, host, label, engine, engineDeployed: req.engine === null && deployed, flavor, spec, notes, close };
}
