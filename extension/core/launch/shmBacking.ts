/**
 * A private directory for Open MPI's shared-memory segments, one per launch, removed after it whatever the outcome.
 *
 * Why: Open MPI's shared-memory BTL (vader in 4.x, sm in 5.x) puts one segment per rank in /dev/shm
 * (`vader_segment.<node>.<job>.<rank>`, 4 MiB and more) and registers it for removal by its launcher at a normal job
 * end; ranks that crash or are killed skip that, so every crashed reproducer trial, timed-out map or lost ssh
 * connection left its segments in the user's /dev/shm until reboot (seen in the engine tier: docs/reliability.md,
 * "leftovers"). Giving each launch `--mca btl_vader_backing_directory <mktemp -d /dev/shm/gpumpi-shm-…>` and removing
 * that directory afterwards removes them too, without knowing the killed job's id.
 *
 * Where it is not used, and why: the directory must exist on every node that hosts ranks, and a missing one does not
 * fail the run — measured with Open MPI 4.1.4: the BTL then silently drops out and same-node peers talk over TCP
 * ("Using vader btl" became tcp connects). So only launches whose ranks all run on the host the launcher runs on get
 * one: mpirun/mpiexec without a host list or host file. Not srun (ranks on compute nodes this product cannot create a
 * directory on), not a launch that names hosts. The parameter is per version: `btl_vader_backing_directory` in Open
 * MPI 2.x–4.x (Debian 12's 4.1.4 ompi_info: default /dev/shm), `btl_sm_backing_directory` in 5.x (the H200 testbed's
 * 5.0.7 ompi_info lists btl_vader_backing_directory only as its synonym); unknown versions get none.
 */
import type { Host } from '../host';

/** Launcher options that place ranks on other hosts (then the directory would be missing there). */
const OTHER_HOSTS = /^(--?host|-H|--?hostfile|--?machinefile|--default-hostfile|-hosts|-f|--?rankfile|--nodelist|--?add-host)(=|$)/;

/** The backing-directory MCA parameter for an Open MPI version text (`mpirun --version` / ompi_info), or null. */
export function shmBackingParam(versionText: string): string | null {
	const m = /(?:Open MPI|OpenRTE|ompi:version:full:)\)?\s*v?(\d+)\.(\d+)/i.exec(versionText);
	if (!m) { return null; }
	const major = Number(m[1]);
	if (major >= 5) { return 'btl_sm_backing_directory'; }
	return major >= 2 ? 'btl_vader_backing_directory' : null;
}

/** Whether a launch with these launcher options keeps every rank on the launching host. */
export function ranksStayHere(extraArgs: readonly string[]): boolean {
	return !extraArgs.some(a => OTHER_HOSTS.test(a));
}

/** Whether the user already chose a backing directory (MCA list or OMPI_MCA_ environment): then theirs is kept. */
export function backingChosen(mca: ReadonlyArray<[string, string]>, env: ReadonlyArray<[string, string]>): boolean {
	return mca.some(([k]) => /_backing_directory$/.test(k)) || env.some(([k]) => /^OMPI_MCA_btl_\w+_backing_directory$/.test(k));
}

const paramCache = new WeakMap<Host, Map<string, Promise<string | null>>>();

/** The parameter for `mpirun` on `host`, from its `--version` (asked once per host object and launcher). */
export function detectShmBackingParam(host: Host, mpirun: string): Promise<string | null> {
	let byLauncher = paramCache.get(host);
	if (!byLauncher) { byLauncher = new Map(); paramCache.set(host, byLauncher); }
	let p = byLauncher.get(mpirun);
	if (!p) {
		p = host.run([mpirun, '--version'], { timeoutMs: 15_000 }).then(r => (r.exitCode === 0 ? shmBackingParam(r.stdout + r.stderr) : null));
		byLauncher.set(mpirun, p);
	}
	return p;
}

/** A created directory and the MCA setting that points Open MPI at it. */
export interface ShmDir {
	dir: string;
	mca: [string, string];
}

/** `mktemp -d /dev/shm/gpumpi-shm-XXXXXXXX` on the host: the directory, or null when it cannot be made. */
export async function makePrivateShmDir(host: Host): Promise<string | null> {
	const r = await host.run(['mktemp', '-d', '/dev/shm/gpumpi-shm-XXXXXXXX'], { timeoutMs: 15_000 });
	const dir = r.stdout.trim();
	return r.exitCode === 0 && /^\/dev\/shm\/gpumpi-shm-[A-Za-z0-9]{8}$/.test(dir) ? dir : null;
}

/** A private directory for one launch; null (and the launch runs with Open MPI's default) when it cannot be made. */
export async function createShmDir(host: Host, param: string): Promise<ShmDir | null> {
	const dir = await makePrivateShmDir(host);
	return dir ? { dir, mca: [param, dir] } : null;
}

/**
 * Remove a private directory and whatever was left in it. Returns a note when there was something to say: the
 * segments removed (`whose`: "Open MPI shared-memory segment(s) the ranks left"; a sign that they did not end
 * normally) or a failure to remove it.
 */
export async function removePrivateShmDir(host: Host, dir: string, whose: string): Promise<string | null> {
	const left = (await host.listDir(dir)) ?? [];
	const rm = await host.run(['rm', '-rf', '--', dir], { timeoutMs: 30_000 });
	if (rm.exitCode !== 0) {
		return `could not remove the shared-memory directory ${dir} on ${host.ref.label}: ${rm.error ?? (rm.stderr.trim() || `exit ${rm.exitCode ?? rm.signal ?? '?'}`)}`;
	}
	if (left.length === 0) { return null; }
	return `removed ${left.length} ${whose} in ${dir} (${left.slice(0, 4).join(', ')}${left.length > 4 ? ', …' : ''}): processes that do not end normally leave them`;
}

/** Remove a launch's directory and the segments its ranks left (removePrivateShmDir). */
export function removeShmDir(host: Host, shm: ShmDir): Promise<string | null> {
	return removePrivateShmDir(host, shm.dir, 'Open MPI shared-memory segment(s) the ranks left');
}

/**
 * The environment for a `ucx_info -d` run: UCX_POSIX_DIR in a private directory, because `ucx_info -d` opens every
 * transport, the posix one included, whose segment (`ucx_shm_posix_<hex>`, up to 1.5 MB seen) stays in /dev/shm when
 * the tool is killed (a timeout, Ctrl-C of an inspection): seen in the engine tier 2026-12-06, 1 leftover in 15
 * interrupted `collect` runs, and 2 in 100 `ucx_info -d` SIGKILLed at 0–39 ms; with the variable, 8 of 200 such
 * kills left theirs in the private directory and none in /dev/shm, and the output is byte-for-byte the same.
 * Not where the user set UCX_POSIX_DIR (theirs is what the tool should see). Null: no directory, run as it is.
 */
export async function ucxInfoShmDir(host: Host, env: Record<string, string>): Promise<string | null> {
	return env.UCX_POSIX_DIR !== undefined ? null : makePrivateShmDir(host);
}
