/**
 * Turn the collector's RawOutput[] into the Facts model by dispatching each output to its parser.
 * Pure: depends only on `raw`. Failed runs (exitCode null / error) become issues, not exceptions.
 */
import type { RawOutput } from '../../shared/report';
import { emptyFacts, Facts, ParseIssue } from '../facts';
import { engineRankFacts, parseEngineInspect, parseProbe } from './engineJson';
import { scanLogSignatures } from './logSignatures';
import { mcaSettingsFromEnv, parseEnv, parseIdentity, parseMcaParamFile, parseWhich } from './mcaParams';
import { classifyVersionText, parseMpichVersion, parseMpirunVersion } from './mpiVersion';
import { parseNvidiaSmiTopo, parseNvidiaSmiXml } from './nvidiaSmi';
import { parseOmpiInfo } from './ompiInfo';
import { parseLinkOrder } from './linkOrder';
import { parseMpivars } from './mpivars';
import { emptyLibfabric, FI_INFO_IDS, parseFiInfoRaw } from './fiInfo';
import { parseGuardRanks, parseLdd, parseMpi4pyProbe, parseProgram, parseScriptLines } from './programFacts';
import { issue, lineEvidence, splitLines } from './text';
import { parseSysGpuNuma, parseSysInfiniband, parseSysModules } from './sysFacts';
import { emptyUcx, parseUcxBuild, parseUcxConfig, parseUcxDevices, parseUcxVersion } from './ucxInfo';

/** Ids whose absence is normal (the tool simply is not installed): no issue when they fail with "not found". */
const OPTIONAL_IDS = new Set(['mpichversion', 'mpivars', 'mpi4py', 'nvidia_smi_topo', 'nvidia_smi_xml', 'ucx_info_v', 'ucx_info_b', 'ucx_info_d', 'ucx_info_c', 'probe', 'sys_module_nvidia', 'sys_modules', 'sys_infiniband', 'sys_gpu_numa']);

/**
 * The programs the collector runs, by RawOutput id (the engine by what it is). One that is not there is not a parse
 * problem (nothing was read): absentTools lists them for the one "not installed" finding (analyze.ts).
 */
const TOOL_IDS: Readonly<Record<string, string>> = {
	ompi_info: 'ompi_info', mpirun_version: 'mpirun', mpichversion: 'mpichversion', mpivars: 'mpivars',
	ucx_info_v: 'ucx_info', ucx_info_b: 'ucx_info', ucx_info_d: 'ucx_info', ucx_info_c: 'ucx_info',
	nvidia_smi_topo: 'nvidia-smi', nvidia_smi_xml: 'nvidia-smi', engine: 'the gpumpi engine',
};

/** A program the collector looked for and did not find. */
export interface AbsentTool {
	id: string;
	/** Its name as run ("mpirun.mpich", "ucx_info"), or "the gpumpi engine". */
	program: string;
	command: string[];
	/** Why, as the collector said it ("not found on PATH", "engine not built: tried …", "mpirun not found on PATH"). */
	error: string;
	/** Does the inspection expect it everywhere (ompi_info, mpirun, the engine), rather than only on some stacks? */
	expected: boolean;
}

/** Did this run fail because its program is not there (not on PATH, not found, the engine not built)? */
function isAbsent(r: RawOutput): boolean {
	return Object.hasOwn(TOOL_IDS, r.id) && r.exitCode === null && !r.timedOut && /\bnot found\b|ENOENT|no such file|\bnot built\b/i.test(r.error ?? '');
}

/** The programs of `raw` that were not there, in collection order. Total: any input. */
export function absentTools(raw: readonly RawOutput[]): AbsentTool[] {
	return (Array.isArray(raw) ? raw : []).filter((r) => typeof r === 'object' && r !== null).map(sane).filter(isAbsent).map((r) => ({
		id: r.id,
		program: r.id === 'engine' || r.command.length === 0 ? TOOL_IDS[r.id] : r.command[0].replace(/^.*\//, ''),
		command: r.command, error: r.error ?? '', expected: !OPTIONAL_IDS.has(r.id),
	}));
}

function rawFailed(r: RawOutput): boolean {
	return r.exitCode === null || r.timedOut === true;
}

function asText(v: unknown): string { return typeof v === 'string' ? v : ''; }

/** The note proc.ts's CappedBuffer puts where it dropped the middle of an output over its cap. */
const TRUNCATION = /\[… (\d+) bytes of output truncated by gpumpi-doctor …\]/;

/** Normalise one raw entry that may come from an untrusted bundle. */
function sane(r: RawOutput): RawOutput {
	return {
		id: asText(r.id), command: Array.isArray(r.command) ? r.command.filter((c): c is string => typeof c === 'string') : [],
		exitCode: typeof r.exitCode === 'number' ? r.exitCode : null, stdout: asText(r.stdout), stderr: asText(r.stderr),
		durationMs: typeof r.durationMs === 'number' ? r.durationMs : 0, error: typeof r.error === 'string' ? r.error : undefined,
		timedOut: r.timedOut === true,
		...(Array.isArray(r.notes) ? { notes: r.notes.filter((n): n is string => typeof n === 'string') } : {}),
	};
}

function failureIssue(r: RawOutput): ParseIssue | null {
	// A program that is not there gave nothing to read: absentTools reports it (once, for all of them).
	if (isAbsent(r)) { return null; }
	const why = r.timedOut ? (r.error || 'timed out') : (r.error || (r.exitCode === null ? 'did not run' : `exit code ${r.exitCode}`));
	const optional = OPTIONAL_IDS.has(r.id) || r.id.startsWith('mca_params:');
	if (r.exitCode === null && optional && /not found|ENOENT|no such file/i.test(why)) { return null; }
	const firstErr = splitLines(r.stderr.slice(0, 4096)).find((l) => l.text.trim() !== '');
	return issue(r.id, r.timedOut ? 'warning' : 'info', `${r.command.join(' ') || r.id}: ${why}.`,
		firstErr ? [lineEvidence(r.id, firstErr)] : []);
}

/** Build the Facts for one host from its raw outputs. Never throws for any input shape it is typed for. */
export function buildFacts(rawIn: readonly RawOutput[], hostLabel: string): Facts {
	const facts = emptyFacts(hostLabel);
	const issues = facts.issues;
	const raw = (Array.isArray(rawIn) ? rawIn : []).filter((r) => typeof r === 'object' && r !== null).map(sane);
	const ucx = emptyUcx();
	let ucxSeen = false;
	let mpirunImpl = null as ReturnType<typeof classifyVersionText> | null;

	for (const r of raw) {
		facts.raw.push({ id: r.id, ok: !rawFailed(r) && r.exitCode === 0, exitCode: r.exitCode, error: r.error ?? '' });
		// fi_info reads its own failures: not installed is normal, a time-out is a fact a rule explains, exit 61 an answer.
		if ((FI_INFO_IDS as readonly string[]).includes(r.id)) {
			facts.libfabric ??= emptyLibfabric();
			issues.push(...parseFiInfoRaw(r, facts.libfabric));
			continue;
		}
		if (rawFailed(r)) { const i = failureIssue(r); if (i) { issues.push(i); } if (r.stdout === '') { continue; } }
		const out = r.stdout;
		const id = r.id;
		const cut = TRUNCATION.exec(out);
		if (cut) {
			issues.push(issue(id, 'warning', `${r.command.join(' ') || id}: its output was larger than the cap on what is kept (8 MiB for a tool, 32 MiB for the engine); `
				+ `${cut[1]} bytes in the middle were dropped (the head and the tail are kept), so facts from that part are missing.`, []));
		}
		if (id === 'ompi_info') {
			const res = parseOmpiInfo(out, id);
			issues.push(...res.issues);
			if (res.facts && !facts.mpi.openmpi) { facts.mpi.openmpi = res.facts; }
		} else if (id === 'mpirun_version') {
			const res = parseMpirunVersion(out + (out.trim() === '' ? r.stderr : ''), id);
			issues.push(...res.issues);
			mpirunImpl = res.info;
			facts.mpi.launcherImplementation = res.info.implementation;
			facts.mpi.launcherVersion = res.info.line;
		} else if (id === 'mpichversion') {
			const res = parseMpichVersion(out, id);
			issues.push(...res.issues);
			if (res.facts) { facts.mpi.mpich = res.facts; }
		} else if (id === 'ucx_info_v') { ucxSeen = true; issues.push(...parseUcxVersion(out, ucx, id)); }
		else if (id === 'ucx_info_b') { ucxSeen = true; issues.push(...parseUcxBuild(out, ucx, id)); }
		else if (id === 'ucx_info_d') { ucxSeen = true; issues.push(...parseUcxDevices(out, ucx, id)); }
		else if (id === 'ucx_info_c') { ucxSeen = true; issues.push(...parseUcxConfig(out, ucx, id)); }
		else if (id === 'nvidia_smi_topo') {
			const res = parseNvidiaSmiTopo(out, id);
			issues.push(...res.issues);
			facts.gpu.topology = res.rows;
		} else if (id === 'nvidia_smi_xml') { issues.push(...parseNvidiaSmiXml(out, facts.gpu, id)); }
		else if (id.startsWith('mca_params:')) {
			const res = parseMcaParamFile(out, id.slice('mca_params:'.length), id);
			issues.push(...res.issues);
			facts.mpi.paramFiles.push(res.file);
		} else if (id === 'env') {
			const res = parseEnv(out, id);
			issues.push(...res.issues);
			facts.env = res.entries;
			facts.mpi.envParams = mcaSettingsFromEnv(res.entries, 'env');
		} else if (id === 'which') {
			const res = parseWhich(out, id);
			issues.push(...res.issues);
			facts.which = res.which;
		} else if (id === 'identity') {
			const res = parseIdentity(out, id);
			issues.push(...res.issues);
			facts.identity = res.identity;
		} else if (id === 'engine') {
			const res = parseEngineInspect(out, id);
			issues.push(...res.issues);
			facts.engine = { document: res.doc, ranks: res.doc ? res.doc.ranks.map((rk, i) => engineRankFacts(rk, i, id)) : [], command: r.command };
		} else if (id === 'probe') {
			const res = parseProbe(out, id);
			issues.push(...res.issues);
			if (res.probe) { facts.probe = { libraries: res.probe.libraries, nvml: res.probe.nvml }; }
		} else if (id === 'sys_modules' || id === 'sys_module_nvidia') {
			// sys_module_nvidia: the older `ls /sys/module | grep nvidia` listing (bare names), read the same way.
			issues.push(...parseSysModules(out, facts.sys, facts.gpu, id));
		} else if (id === 'sys_infiniband') { issues.push(...parseSysInfiniband(out, facts.sys, id)); }
		else if (id === 'sys_gpu_numa') { issues.push(...parseSysGpuNuma(out, facts.sys, id)); }
		else if (id.startsWith('ldd:')) { facts.programLibs.push({ object: id.slice('ldd:'.length), libs: parseLdd(out, id) }); }
		else if (id.startsWith('script:')) { facts.scripts.push({ path: id.slice('script:'.length), lines: parseScriptLines(out, id) }); }
		else if (id === 'program') { facts.program = parseProgram(out, id); }
		else if (id === 'guard_ranks') { facts.guardRanks = parseGuardRanks(out, id); }
		else if (id === 'mpi4py' && r.exitCode === 0) {
			const p = parseMpi4pyProbe(out, id);
			// The interpreter answered (mpi4py installed or not: version null says not): kept; an empty output is nothing known.
			if (p.version || p.python !== '') { facts.mpi4py = p; }
		}
	}
	if (ucxSeen) { facts.ucx = ucx; }
	facts.messages = scanLogSignatures(raw);
	for (const r of raw.filter((x) => x.id.startsWith('readelf_d:') && x.error === undefined)) {
		const program = r.id.slice('readelf_d:'.length);
		const sym = raw.find((x) => x.id === `readelf_s:${program}`);
		facts.programLinks.push({ program, order: parseLinkOrder(r.stdout, sym?.stdout ?? '', r.id, sym?.id ?? r.id) });
	}
	// Read also when it failed: MPI_Init aborting on a CVAR it cannot parse is what mpivars then says (on stderr).
	const mv = raw.find((x) => x.id === 'mpivars' && x.error === undefined);
	if (mv) { facts.mpichCvars = parseMpivars(`${mv.stdout}\n${mv.stderr}`, mv.id); }
	deriveMpi(facts, mpirunImpl);
	return facts;
}

/** Decide implementation and version from every source, most specific first. */
function deriveMpi(facts: Facts, mpirun: ReturnType<typeof classifyVersionText> | null): void {
	const m = facts.mpi;
	const ompi = m.openmpi;
	const rank0 = facts.engine?.ranks[0];
	if (rank0 && rank0.libraryVersion.value !== '') {
		const c = classifyVersionText(rank0.libraryVersion.value, 'engine');
		if (c.implementation !== 'unknown') {
			m.implementation = { value: c.implementation, evidence: rank0.libraryVersion.evidence };
			if (c.version) { m.version = { value: c.version.value, evidence: rank0.libraryVersion.evidence }; }
			if (c.implementation === 'mpich' && !m.mpich) {
				const res = parseMpichVersion(rank0.libraryVersion.value, 'engine', 'engine');
				if (res.facts) { m.mpich = res.facts; }
			}
			return;
		}
	}
	if (mpirun && mpirun.implementation !== 'unknown' && mpirun.line) {
		m.implementation = { value: mpirun.implementation, evidence: mpirun.line.evidence };
		m.version = mpirun.version;
		return;
	}
	if (ompi?.version) {
		m.implementation = { value: 'openmpi', evidence: ompi.version.evidence };
		m.version = ompi.version;
		return;
	}
	if (m.mpich?.version) {
		m.implementation = { value: 'mpich', evidence: m.mpich.version.evidence };
		m.version = m.mpich.version;
	}
}
