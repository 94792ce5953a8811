/**
 * Cray MPICH moves GPU buffers only through its GPU Transport Layer, libmpi_gtl_cuda (libmpi_gtl_hsa on AMD), which
 * the program must be linked to; with MPICH_GPU_SUPPORT_ENABLED=1 and no GTL in the process MPI_Init aborts:
 * "MPIDI_CRAY_init: GPU_SUPPORT_ENABLED is requested, but GTL library is not linked" (CSCS's Cray MPICH page; seen in
 * APPFL/APPFL#258 and gyselax/gyselalibxx#479 with Python, whose interpreter links no GTL). What is read: the program's
 * libraries as the loader resolves them (`ldd`, the closure: a site may add the GTL to libmpi's own DT_NEEDED,
 * eth-cscs/stackinator#174), else its DT_NEEDED entries (`readelf -d`); for a Python program the libraries of mpi4py's
 * MPI module; LD_PRELOAD and MPICH_GPU_SUPPORT_ENABLED as the ranks get them; the abort line when a run printed it.
 * Cray MPICH is recognised by its library names (libmpi_cray.so.12, libmpi_gnu_<ver>.so.12, libmpi_nvidia…, …), by a
 * resolved path under …/cray/pe/mpich/ or a cray-mpich install, or by the MPI library's own version string.
 */
import type { Evidence, Finding } from '../../shared/report';
import type { Facts } from '../facts';
import { envSettings } from './helpers';
import { ALL_VERSIONS, ev, finding, Rule } from './rule';
import { src, URLS as U } from './sources';

/** Cray MPICH's library sonames: libmpi_<compiler>[_<version>].so.12 (the MPICH ABI). */
const CRAY_SONAME = /^libmpi_(cray|gnu|nvidia|intel|aocc|amd|crayclang|pgi)(_\d+)?\.so/;
const MPI_SONAME = /^lib(mpi|mpich)(_[a-z]+(_\d+)?)?\.so/;
const GTL = /^libmpi_gtl_(cuda|hsa|ze)\.so/;
const CRAY_PATH = /\/cray\/pe\/mpich\/|cray-mpich/;

/** One object's libraries (ldd closure, or DT_NEEDED when there is no ldd), with the Cray MPI and GTL among them. */
interface ObjectLibs { object: string; closure: boolean; mpi: { name: string; evidence: Evidence } | null; gtl: { name: string; evidence: Evidence } | null }

function objects(facts: Facts): ObjectLibs[] {
	const cray = facts.mpi.implementation?.value === 'cray';
	const out: ObjectLibs[] = [];
	for (const o of facts.programLibs) {
		const mpi = o.libs.find((l) => CRAY_SONAME.test(l.soname) || (MPI_SONAME.test(l.soname) && (CRAY_PATH.test(l.path ?? '') || cray)));
		const gtl = o.libs.find((l) => GTL.test(l.soname));
		out.push({ object: o.object, closure: true, mpi: mpi ? { name: mpi.soname, evidence: mpi.evidence } : null, gtl: gtl ? { name: gtl.soname, evidence: gtl.evidence } : null });
	}
	for (const p of facts.programLinks) {
		// The same program read by ldd already: its closure is the stronger evidence.
		if (out.some((o) => o.object === p.program || o.object.endsWith(`/${p.program.replace(/^\.\//, '')}`))) { continue; }
		const mpi = p.order.needed.find((n) => CRAY_SONAME.test(n.soname) || (cray && MPI_SONAME.test(n.soname)));
		const gtl = p.order.needed.find((n) => GTL.test(n.soname));
		out.push({ object: p.program, closure: false, mpi: mpi ? { name: mpi.soname, evidence: mpi.evidence } : null, gtl: gtl ? { name: gtl.soname, evidence: gtl.evidence } : null });
	}
	return out;
}

const gtlNotLinked: Rule = {
	id: 'cray-mpich-gtl-not-linked', severity: 'error', title: 'Cray MPICH GPU support is switched on, but the program does not load the GTL library',
	reads: ['env.MPICH_GPU_SUPPORT_ENABLED', 'env.LD_PRELOAD', 'ldd:<program> / ldd:<mpi4py MPI module>', 'readelf_d:<program>', 'program (kind)', 'messages (gtl-not-linked)'],
	appliesTo: { vendorMpi: ALL_VERSIONS },
	verifiedAgainst: [
		src(U.cscsCrayMpich, 'CSCS, Cray MPICH: GPU-aware MPI needs the GTL library linked and MPICH_GPU_SUPPORT_ENABLED=1; `ldd myexecutable | grep gtl` checks it; without the GTL, MPI initialisation aborts', 'MPIDI_CRAY_init: GPU_SUPPORT_ENABLED is requested, but GTL library is not linked'),
		src(U.cscsCrayMpich, 'CSCS, Cray MPICH: with Cray modules, load the accelerator module (craype-accel-nvidia90) before compiling', 'If you are using Cray modules you must load the corresponding accelerator module, e.g. `craype-accel-nvidia90`, before compiling your application.'),
		src(U.nerscCrayMpich, 'NERSC, Cray MPICH: MPICH_GPU_SUPPORT_ENABLED=1 and the GTL library for GPU buffers'),
		src(U.appfl258, 'a Python (conda) job on Polaris: "GPU_SUPPORT_ENABLED is requested, but GTL library is not linked"'),
		src(U.gyselalibxx479, 'Python scripts on Adastra do not link the GTL, in conflict with MPICH_GPU_SUPPORT_ENABLED=1'),
		src(U.lumiMpi4py41, 'LUMI: GPU-aware MPI with cray-python\'s mpi4py needs LD_PRELOAD=${CRAY_MPICH_ROOTDIR}/gtl/lib/libmpi_gtl_hsa.so first'),
		src(U.stackinator174, 'CSCS uenvs add libmpi_gtl_cuda.so to Cray MPICH\'s own DT_NEEDED (patchelf --add-needed): linking libmpi is then enough'),
	],
	fixSummary: 'Link the GTL: load the craype-accel-nvidia* module before compiling with the Cray wrappers, or add -lmpi_gtl_cuda (from $CRAY_MPICH_ROOTDIR/gtl/lib); for Python, LD_PRELOAD the GTL library; a job that passes no GPU buffer to MPI can run with MPICH_GPU_SUPPORT_ENABLED=0 instead.',
	evaluate(facts) {
		const on = envSettings(facts, 'MPICH_GPU_SUPPORT_ENABLED')[0];
		if (!on || on.value.trim() !== '1') { return []; }
		const preload = envSettings(facts, 'LD_PRELOAD').find((p) => p.value.split(/[:\s]+/).some((x) => GTL.test(x.replace(/^.*\//, ''))));
		if (preload) { return []; }
		const said = facts.messages.find((m) => m.kind === 'gtl-not-linked');
		const python = facts.program?.kind === 'python';
		const out: Finding[] = [];
		for (const o of objects(facts)) {
			if (!o.mpi || o.gtl) { continue; }
			const isModule = facts.mpi4py?.mpiModule?.value === o.object;
			const what = isModule ? `mpi4py's MPI module ${o.object}` : o.object;
			const where = o.closure ? 'none of the libraries the loader resolves for it (ldd)' : 'none of its DT_NEEDED entries (readelf -d; ldd was not available, so a library it loads could still bring the GTL)';
			out.push(finding(this,
				`MPICH_GPU_SUPPORT_ENABLED=${on.value} (${on.origin}) switches Cray MPICH's GPU support on, and ${what} uses Cray MPICH (${o.mpi.name}), but ${where} is a GTL library (libmpi_gtl_cuda.so) and LD_PRELOAD names none: MPI_Init aborts with "MPIDI_CRAY_init: GPU_SUPPORT_ENABLED is requested, but GTL library is not linked".${said ? ' The run printed exactly that.' : ''}${python || isModule ? ' A Python interpreter links no GTL itself: preload it for the ranks.' : ''}`,
				ev(said?.evidence, on.evidence, o.mpi.evidence),
				{
					text: python || isModule
						? 'Preload the GTL for the ranks (LD_PRELOAD=$CRAY_MPICH_ROOTDIR/gtl/lib/libmpi_gtl_cuda.so, forwarded by the launcher), or set MPICH_GPU_SUPPORT_ENABLED=0 if no GPU buffer goes to MPI.'
						: 'Relink with the GTL: load the craype-accel-nvidia* module before compiling with the Cray wrappers (cc/CC/ftn), or add -L$CRAY_MPICH_ROOTDIR/gtl/lib -lmpi_gtl_cuda; or set MPICH_GPU_SUPPORT_ENABLED=0 if no GPU buffer goes to MPI. Check with ldd.',
					command: python || isModule ? 'export LD_PRELOAD=$CRAY_MPICH_ROOTDIR/gtl/lib/libmpi_gtl_cuda.so' : `ldd ${o.object} | grep gtl`,
				},
				o.closure ? 'error' : 'warning'));
		}
		return out;
	},
};

export const gtlRules: readonly Rule[] = [gtlNotLinked];
