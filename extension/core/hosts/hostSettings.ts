/**
 * The `gpumpiDoctor.hosts` setting: remote hosts reached over ssh. Validated by a pure function (hostile values are
 * data: wrong types, NUL bytes, destinations ssh would read as options, duplicate names) that keeps the good entries
 * and returns one clear problem per rejected value. The `setup` line is the user's own shell code, executed as
 * shell on their host by design (see sshHost.ts); it is only checked for NUL bytes and size.
 */
import * as path from 'node:path';
import { SRUN_MPI_PLUGIN } from '../launch/launchSpec';
import { destinationProblem } from './sshHost';

/** One configured remote host. */
export interface HostSetting {
	/** Display name, unique; what `--host NAME` selects. */
	name: string;
	/** ssh destination: an alias from ~/.ssh/config or user@host. */
	sshHost: string;
	/** Shell line run before every command on that host, e.g. `module load openmpi`. */
	setup: string;
	/** mpirun on that host ("" for mpirun on its PATH). */
	mpirun: string;
	/** Engine binary on that host ("" to deploy and build it there). */
	enginePath: string;
	/** How the reproducers and the map launch there: mpirun, or Slurm's srun. */
	launcher: 'mpirun' | 'srun';
	/** srun allocation options, one argv item each (e.g. ["-p", "gpu", "-N", "2", "-t", "10"]); passed as data. */
	srunArgs: string[];
	/** srun `--mpi=` plugin ("" for the site's default). */
	srunMpi: string;
}

const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const MAX_SETUP = 4096;
const MAX_SRUN_ARGS = 32;
const HOST_KEYS = ['name', 'sshHost', 'setup', 'mpirun', 'enginePath', 'launcher', 'srunArgs', 'srunMpi'];

/** Why `name` cannot name a host (as typed into an input box), or null. `taken`: names other entries use. */
export function hostNameProblem(name: string, taken: readonly string[] = []): string | null {
	if (!NAME_RE.test(name)) { return 'a name is 1-64 letters, digits, ".", "_" or "-", starting with a letter or digit'; }
	if (taken.includes(name)) { return `the name ${JSON.stringify(name)} is already used`; }
	return null;
}

/** Why `setup` cannot be a setup line, or null (it is the user's own shell code: only NUL bytes and size are checked). */
export function setupProblem(setup: string): string | null {
	if (setup.includes('\0')) { return 'the setup line contains a NUL byte'; }
	if (setup.length > MAX_SETUP) { return `the setup line is longer than ${MAX_SETUP} characters`; }
	return null;
}

/** Validate the raw setting value. */
export function validateHostSettings(raw: unknown): { hosts: HostSetting[]; problems: string[] } {
	const hosts: HostSetting[] = [];
	const problems: string[] = [];
	if (raw === undefined || raw === null) { return { hosts, problems }; }
	if (!Array.isArray(raw)) { return { hosts, problems: [`gpumpiDoctor.hosts must be an array of hosts, got ${typeName(raw)}`] }; }
	raw.forEach((entry: unknown, i: number) => {
		const where = `gpumpiDoctor.hosts[${i}]`;
		if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
			problems.push(`${where} must be an object like {"name": "...", "sshHost": "..."}, got ${typeName(entry)}`);
			return;
		}
		const e = entry as Record<string, unknown>;
		const bad: string[] = [];
		const str = (key: string, required: boolean): string => {
			const v = e[key];
			if (v === undefined && !required) { return ''; }
			if (typeof v !== 'string') { bad.push(`${key} must be a string, got ${typeName(v)}`); return ''; }
			if (v.includes('\0')) { bad.push(`${key} contains a NUL byte`); return ''; }
			return v;
		};
		const name = str('name', true);
		const sshHost = str('sshHost', true);
		const setup = str('setup', false);
		const mpirun = str('mpirun', false);
		const enginePath = str('enginePath', false);
		const launcher = str('launcher', false) || 'mpirun';
		const srunMpi = str('srunMpi', false);
		let srunArgs: string[] = [];
		if (e.srunArgs !== undefined) {
			if (!Array.isArray(e.srunArgs) || e.srunArgs.length > MAX_SRUN_ARGS || !e.srunArgs.every(a => typeof a === 'string' && a.length > 0 && a.length <= 256 && !a.includes('\0') && !a.includes('\n'))) {
				bad.push(`srunArgs must be an array of up to ${MAX_SRUN_ARGS} non-empty strings (one argv item each, no NUL or newline)`);
			} else {
				srunArgs = e.srunArgs as string[];
			}
		}
		if (launcher !== 'mpirun' && launcher !== 'srun') { bad.push(`launcher must be "mpirun" or "srun", got ${JSON.stringify(launcher.slice(0, 40))}`); }
		if (srunMpi && !SRUN_MPI_PLUGIN.test(srunMpi)) { bad.push(`srunMpi must be a plugin name like pmi2 or pmix, got ${JSON.stringify(srunMpi.slice(0, 40))}`); }
		if (typeof e.name === 'string' && !NAME_RE.test(name)) {
			bad.push(`name ${JSON.stringify(name.slice(0, 80))} must be 1-64 letters, digits, ".", "_" or "-", starting with a letter or digit`);
		}
		if (typeof e.sshHost === 'string') {
			const p = destinationProblem(sshHost);
			if (p) { bad.push(p); }
		}
		if (setup.length > MAX_SETUP) { bad.push(`setup is longer than ${MAX_SETUP} characters`); }
		if (mpirun && !(path.posix.isAbsolute(mpirun) || /^[A-Za-z0-9._+-]+$/.test(mpirun))) {
			bad.push(`mpirun must be an absolute path or a program name, got ${JSON.stringify(mpirun.slice(0, 80))}`);
		}
		if (enginePath && !path.posix.isAbsolute(enginePath)) { bad.push(`enginePath must be an absolute path on that host, got ${JSON.stringify(enginePath.slice(0, 80))}`); }
		for (const key of Object.keys(e)) {
			if (!HOST_KEYS.includes(key)) { bad.push(`unknown key ${JSON.stringify(key.slice(0, 40))}`); }
		}
		if (bad.length === 0 && hosts.some(h => h.name === name)) { bad.push(`the name ${JSON.stringify(name)} is used twice`); }
		if (bad.length > 0) { problems.push(`${where}${typeof e.name === 'string' && NAME_RE.test(name) ? ` (${name})` : ''}: ${bad.join('; ')}`); return; }
		hosts.push({ name, sshHost, setup, mpirun, enginePath, launcher: launcher === 'srun' ? 'srun' : 'mpirun', srunArgs, srunMpi });
	});
	return { hosts, problems };
}

/**
 * Resolve `--host X`: a configured host by name, else X itself as an ssh destination (an alias or user@host).
 * Returns the host or the reason X is unusable.
 */
export function resolveHost(hosts: readonly HostSetting[], x: string, setup?: string): HostSetting | { error: string } {
	const configured = hosts.find(h => h.name === x);
	if (configured) { return setup !== undefined ? { ...configured, setup } : configured; }
	const p = destinationProblem(x);
	if (p) { return { error: p }; }
	if (setup !== undefined && (setup.includes('\0') || setup.length > MAX_SETUP)) { return { error: 'the setup line contains a NUL byte or is too long' }; }
	return hostSetting({ name: x, sshHost: x, setup: setup ?? '' });
}

/** A host entry with defaults for everything not given (mpirun launcher, deploy the engine). */
export function hostSetting(p: Pick<HostSetting, 'name' | 'sshHost'> & Partial<HostSetting>): HostSetting {
	return { setup: '', mpirun: '', enginePath: '', launcher: 'mpirun', srunArgs: [], srunMpi: '', ...p };
}

function typeName(v: unknown): string {
	if (v === null) { return 'null'; }
	if (Array.isArray(v)) { return 'an array'; }
	return typeof v === 'string' ? `the string ${JSON.stringify(v.slice(0, 60))}` : typeof v;
}
