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
import type { Host } from '../hosts/host';

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

/** `mktemp -d /dev/shm/gpumpi-shm-XXXXXXXX` on the host; null (and the launch runs with Open MPI's default) when it fails. */
export async function createShmDir(host: Host, param: string): Promise<ShmDir | null> {
	const r = await host.run(['mktemp', '-d', '/dev/shm/gpumpi-shm-XXXXXXXX'], { timeoutMs: 15_000 });
	const dir = r.stdout.trim();
	if (r.exitCode !== 0 || !/^\/dev\/shm\/gpumpi-shm-[A-Za-z0-9]{8}$/.test(dir)) { return null; }
	return { dir, mca: [param, dir] };
}

/**
 * Remove the directory and whatever the ranks left in it. Returns a note when there was something to say: the
 * segments removed (a sign that ranks did not end normally) or a failure to remove it.
 */
export async function removeShmDir(host: Host, shm: ShmDir): Promise<string | null> {
	const left = (await host.listDir(shm.dir)) ?? [];
	const rm = await host.run(['rm', '-rf', '--', shm.dir], { timeoutMs: 30_000 });
	if (rm.exitCode !== 0) {
		return `could not remove Open MPI's shared-memory directory ${shm.dir} on ${host.ref.label}: ${rm.error ?? (rm.stderr.trim() || `exit ${rm.exitCode ?? rm.signal ?? '?'}`)}`;
	}
	if (left.length === 0) { return null; }
	return `removed ${left.length} Open MPI shared-memory segment(s) the ranks left in ${shm.dir} (${left.slice(0, 4).join(', ')}${left.length > 4 ? ', …' : ''}): ranks that do not end normally leave them`;
}
