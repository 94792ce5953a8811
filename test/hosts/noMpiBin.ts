/**
 * A PATH without MPI, built for real: a folder of symlinks to every program of the system bin folders except the
 * MPI ones (Open MPI, MPICH/Hydra, OpenSHMEM), as a cluster login node looks before `module load openmpi`.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

/** Programs that belong to an MPI: left out of the no-MPI PATH. */
export const MPI_PROGRAM = /mpi|ompi|orte|hydra|oshmem|opal|shmem/i;

/** Create `root`/no-mpi-bin with the non-MPI programs of `dirs` (first one wins) and return it; the caller removes `root`. */
export function noMpiBin(root: string, dirs = ['/usr/local/bin', '/usr/bin', '/bin']): string {
	const bin = path.join(root, 'no-mpi-bin');
	fs.mkdirSync(bin, { recursive: true });
	for (const dir of dirs) {
		let names: string[] = [];
		try { names = fs.readdirSync(dir); } catch { continue; }
		for (const f of names) {
			if (MPI_PROGRAM.test(f) || fs.existsSync(path.join(bin, f))) { continue; }
			fs.symlinkSync(path.join(dir, f), path.join(bin, f));
		}
	}
	return bin;
}
