/**
 * mpi4py asks for MPI_THREAD_MULTIPLE by default (mpi4py.rc.thread_level = "multiple"; env MPI4PY_RC_THREAD_LEVEL from
 * mpi4py 3.1.0, MPI4PY_RC_THREADS=false for MPI_Init without threads). Open MPI passes "thread multiple" to the pml
 * selection, and pml ucx then asks UCX for a multi-threaded UCP worker; a UCX built without --enable-mt (the default of
 * its configure) gives a single-threaded one, and pml ucx disqualifies itself: "UCP worker does not support
 * MPI_THREAD_MULTIPLE. PML UCX could not be selected" (a warning in 5.0.x, verbose level 1 in 4.1.x), and the job runs
 * over another pml (ob1) — silently a different GPU path. Seen on the H200 testbed (UCX 1.13.1 without thread support).
 * What is read: the mpi4py probe (collect/mpi4pyProbe.ts), the requested level from the ranks' environment and the
 * program's script, `ucx_info -b` (ENABLE_MT), Open MPI's pml settings and components, and what the run said and used:
 * the message (log signature pml-ucx-no-thread-multiple) and, under the guard, each rank's pml.
 */
import type { Evidence } from '../../shared/report';
import type { Facts } from '../facts';
import { versionParts } from '../parsers/text';
import { compareVersions, envSettings, isOpenMpi, mcaSettings, pmlUcxRefusal } from './helpers';
import { ev, finding, Rule } from './rule';
import { src, URLS as U } from './sources';

/** The thread level a program using this mpi4py asks for, and what says so. */
export function requestedLevel(facts: Facts): { level: string; why: string; evidence: Evidence | null } {
	// The script's own settings run before the import (mpi4py.rc.… = …) and win over the package default; the
	// environment wins over rc at import time (getOpt in MPI.src/atimport.pxi reads MPI4PY_RC_<NAME> first).
	const env = (name: string) => envSettings(facts, name)[0];
	const v = facts.mpi4py?.version ? versionParts(facts.mpi4py.version.value) : [];
	const envRead = v.length < 2 || compareVersions(v, [3, 1]) >= 0;
	const threads = env('MPI4PY_RC_THREADS');
	if (threads && envRead && /^(0|false|no|off|n)$/i.test(threads.value.trim())) { return { level: 'single', why: `MPI4PY_RC_THREADS=${threads.value} (${threads.origin}): MPI_Init without threads`, evidence: threads.evidence }; }
	const level = env('MPI4PY_RC_THREAD_LEVEL');
	if (level && envRead) { return { level: level.value.trim().toLowerCase(), why: `MPI4PY_RC_THREAD_LEVEL=${level.value} (${level.origin})`, evidence: level.evidence }; }
	for (const s of facts.scripts) {
		for (const l of s.lines) {
			const m = /mpi4py\.rc\.thread_level\s*=\s*["'](\w+)["']|MPI4PY_RC_THREAD_LEVEL["']?\]?\s*=\s*["'](\w+)["']/.exec(l.text);
			if (m) { return { level: (m[1] ?? m[2]).toLowerCase(), why: `set in the script (line ${l.evidence.lineNo ?? '?'} of ${s.path})`, evidence: l.evidence }; }
			if (/mpi4py\.rc\.threads\s*=\s*False/.test(l.text)) { return { level: 'single', why: `mpi4py.rc.threads = False in the script (line ${l.evidence.lineNo ?? '?'} of ${s.path})`, evidence: l.evidence }; }
		}
	}
	const rc = facts.mpi4py?.rcThreadLevel;
	return { level: rc?.value || 'multiple', why: rc ? `mpi4py.rc.thread_level = "${rc.value}", mpi4py's default, and MPI4PY_RC_THREAD_LEVEL is not set` : 'mpi4py\'s default ("multiple")', evidence: rc?.evidence ?? null };
}

/** The `pml` setting with the highest precedence, if any (param files < environment < rank environment). */
function pmlSetting(facts: Facts) {
	return mcaSettings(facts).filter((s) => s.name === 'pml').pop() ?? null;
}

const threadMultiple: Rule = {
	id: 'mpi4py-thread-multiple-ucx-no-mt', severity: 'warning', title: 'mpi4py asks for MPI_THREAD_MULTIPLE, which this UCX cannot give: Open MPI drops pml ucx',
	reads: ['mpi4py (probe: version, rc.thread_level, its MPI library)', 'env.MPI4PY_RC_THREAD_LEVEL', 'env.MPI4PY_RC_THREADS', 'script:<path> (mpi4py.rc lines)', 'ucx.threadSupport (ucx_info -b ENABLE_MT)', 'mpi.openmpi.components (pml ucx)', 'MCA pml', 'messages (pml-ucx-no-thread-multiple)', 'guard_ranks (pml)'],
	appliesTo: { openmpi: '>=4.0', ucx: 'all' },
	verifiedAgainst: [
		src(U.mpi4pyDocs411, 'mpi4py 4.1.1: rc.thread_level, default "multiple"; MPI4PY_RC_THREAD_LEVEL (new in 3.1.0) "The level of required thread support"', 'The level of required thread support.'),
		src(U.mpi4pyAtimport411, 'mpi4py 4.1.1: the environment variable MPI4PY_RC_<NAME> is read first, then mpi4py.rc; thread_level defaults to "multiple"', 'cdef object thread_level = getOpt(rc, b"thread_level" , \'multiple\'  )'),
		src(U.ompiInstance507, 'Open MPI 5.0.7 selects the pml with "thread multiple" when MPI_THREAD_MULTIPLE was provided', 'mca_pml_base_select (OPAL_ENABLE_PROGRESS_THREADS, ompi_mpi_thread_multiple)'),
		src(U.ompiPmlUcx507, 'Open MPI 5.0.7: pml ucx disqualifies itself when the UCP worker is not multi-threaded, with a warning', 'UCP worker does not support MPI_THREAD_MULTIPLE. " "PML UCX could not be selected'),
		src(U.ompiPmlUcx414, 'Open MPI 4.1.4: the same, printed only at verbose level 1', 'PML_UCX_VERBOSE(1, "UCP worker does not support MPI_THREAD_MULTIPLE. "'),
		src(U.ucxConfigure1131, 'UCX 1.13.1: thread support is a configure option, off by default (#define ENABLE_MT 0 in ucx_info -b)', 'Enable thread support in UCP and UCT, default: NO'),
		src(U.ucxConfigure120, 'UCX 1.20.0: still off by default', 'Enable thread support in UCP and UCT, default: NO'),
		src(U.ucxWorker1131, 'UCX 1.13.1: a UCS_THREAD_MODE_MULTI worker requested of a build without MT is not multi-threaded', 'multi-threaded worker is requested, but library is built'),
		src(U.devForeign, 'the testbed (Open MPI 5.0.7, UCX 1.13.1 without thread support): mpi4py programs ran under pml ucx with MPI4PY_RC_THREAD_LEVEL=single'),
		src(U.obsDebian, 'Debian 12\'s UCX 1.13.1 is built with --enable-mt: mpi4py 3.1.4 with MPI_THREAD_MULTIPLE runs under pml ucx there'),
	],
	fixSummary: 'Ask mpi4py for less than MPI_THREAD_MULTIPLE where the program\'s threads do not call MPI at once (MPI4PY_RC_THREAD_LEVEL=single, funneled or serialized, or mpi4py.rc.thread_level before `from mpi4py import MPI`), or use a UCX built with --enable-mt.',
	evaluate(facts) {
		const said = facts.messages.find((m) => m.kind === 'pml-ucx-no-thread-multiple');
		const ranks = facts.guardRanks ?? [];
		const ranUcx = ranks.find((r) => r.pml === 'ucx');
		const ranOther = ranks.find((r) => r.pml !== null && r.pml !== 'ucx');
		const req = requestedLevel(facts);
		const m4 = facts.mpi4py;
		const lib = m4?.libraryVersion?.value ?? '';
		const openmpi = /^Open MPI/.test(lib) || (lib === '' && isOpenMpi(facts));
		const mt = facts.ucx?.threadSupport ?? null;
		const pml = pmlSetting(facts);
		const pmlComponent = facts.mpi.openmpi?.components.find((c) => c.framework === 'pml' && c.name === 'ucx');
		const excluded = pml !== null && (/^\^/.test(pml.value) ? pml.value.slice(1).split(',').map((x) => x.trim()).includes('ucx') : !pml.value.split(',').map((x) => x.trim()).includes('ucx'));
		const forced = pml !== null && pml.value.trim() === 'ucx';
		if (!said) {
			if (!m4?.version || req.level !== 'multiple' || !openmpi || mt?.value !== false || ranUcx) { return []; }
			if (excluded || (facts.mpi.openmpi && facts.mpi.openmpi.components.length > 0 && !pmlComponent)) { return []; }
		}
		const ompiV = /Open MPI v?(\d+\.\d+(?:\.\d+)?)/.exec(lib)?.[1] ?? facts.mpi.openmpi?.version?.value ?? (isOpenMpi(facts) ? facts.mpi.version?.value : undefined);
		const five = ompiV !== undefined && compareVersions(versionParts(ompiV), [5]) >= 0;
		const who = m4?.version ? `mpi4py ${m4.version.value}${m4.python ? ` (${m4.python})` : ''}` : 'This Python program\'s mpi4py';
		const ucx = mt ? `UCX${facts.ucx?.version ? ` ${facts.ucx.version.value}` : ''} was built without thread support (ucx_info -b: ENABLE_MT 0; --enable-mt is off by default)` : 'the UCX that Open MPI loads has no multi-threaded UCP worker';
		const happened = said
			? ` Open MPI said so: "${said.evidence.line.trim().slice(0, 160)}".`
			: five ? ' Open MPI 5 prints "UCP worker does not support MPI_THREAD_MULTIPLE. PML UCX could not be selected" at MPI_Init.' : ' Open MPI 4.1 does this silently (the message is at pml_ucx_verbose 1).';
		const ran = ranOther ? ` The guarded run used pml ${ranOther.pml} (rank ${ranOther.rank}).` : '';
		// pml ucx refusing this host's transports anyway (ompi-pml-ucx-transport-defaults): the thread level is the next wall.
		const refusal = said ? null : pmlUcxRefusal(facts);
		const also = refusal ? ` Here pml ucx also refuses this host's UCX ${refusal.refuses} with its pml_ucx_tls / pml_ucx_devices values (rule ompi-pml-ucx-transport-defaults): once those are set, the thread level still keeps it off.` : '';
		const consequence = forced
			? ` Here pml is set to ucx (${pml?.origin}): no pml is left and MPI_Init fails ("No components were able to be opened in the pml framework").`
			: ' The job then runs over pml ob1 instead: GPU buffers go through smcuda (CUDA IPC by cuIpcGetMemHandle) or are staged by Open MPI, not through UCX\'s cuda_ipc / cuda_copy lanes or UCX_* settings; nothing fails, the path and its speed differ.';
		return [finding(this,
			`${who} asks MPI_Init_thread for MPI_THREAD_${req.level.toUpperCase()} (${req.why})${lib ? ` of ${lib.trim()}` : ompiV ? ` of Open MPI ${ompiV}` : ''}; ${ucx}, so pml ucx cannot give MPI_THREAD_MULTIPLE and disqualifies itself.${happened}${ran}${consequence}${also}`,
			ev(said?.evidence, req.evidence, m4?.version?.evidence, m4?.libraryVersion?.evidence, mt?.evidence, pml && (forced || !excluded) ? pml.evidence : undefined, pmlComponent?.evidence, ranOther?.evidence),
			{ text: 'If the program\'s Python threads do not call MPI at the same time, ask for less than MPI_THREAD_MULTIPLE before mpi4py.MPI is imported (MPI4PY_RC_THREAD_LEVEL=single was run under pml ucx on the testbed; funneled and serialized are below MULTIPLE too), forwarded to the ranks (mpirun -x MPI4PY_RC_THREAD_LEVEL); or use a UCX built with --enable-mt.', command: 'export MPI4PY_RC_THREAD_LEVEL=single   # mpirun -x MPI4PY_RC_THREAD_LEVEL …' },
			forced ? 'error' : refusal ? 'info' : 'warning')];
	},
};

export const mpi4pyRules: readonly Rule[] = [threadMultiple];
