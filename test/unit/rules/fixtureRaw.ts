/**
 * Test helper: build RawOutput[] from the captured tool outputs in test-fixtures/tools/<system>/, as the collector
 * would have produced them (same ids, stdout = the file's bytes).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { RawOutput } from '../../../extension/shared/report';

/** Repository root, found from the working directory (tests run from it) or this file. */
export const FIXTURES = path.resolve(process.cwd(), 'test-fixtures', 'tools');

/** Contents of one fixture file. */
export function fixtureText(system: string, file: string): string {
	return fs.readFileSync(path.join(FIXTURES, system, file), 'utf8');
}

/** A RawOutput with stdout read from a fixture file. */
export function rawFromFixture(system: string, id: string, file = `${id}.txt`, command: string[] = [id]): RawOutput {
	return { id, command, exitCode: 0, stdout: fixtureText(system, file), stderr: '', durationMs: 1 };
}

/** A RawOutput with the given stdout (used for synthetic documents that tests label as such). */
export function rawText(id: string, stdout: string, extra: Partial<RawOutput> = {}): RawOutput {
	return { id, command: [id], exitCode: 0, stdout, stderr: '', durationMs: 1, ...extra };
}

/** A tool the collector could not find. */
export function rawMissing(id: string): RawOutput {
	return { id, command: [id], exitCode: null, stdout: '', stderr: '', durationMs: 0, error: 'not found' };
}

/** Everything captured on the Debian 12 CPU machine, as the collector's RawOutput[]. */
export function debianRaw(): RawOutput[] {
	const s = 'debian12-cpu';
	return [
		rawFromFixture(s, 'ompi_info', 'ompi_info.txt', ['ompi_info', '--parsable', '--all']),
		rawFromFixture(s, 'mpirun_version', 'mpirun_version.txt', ['mpirun', '--version']),
		rawFromFixture(s, 'mpichversion'),
		rawFromFixture(s, 'ucx_info_v'), rawFromFixture(s, 'ucx_info_b'), rawFromFixture(s, 'ucx_info_d'),
		rawFromFixture(s, 'mca_params:/etc/openmpi/openmpi-mca-params.conf', 'mca_params.txt', ['read', '/etc/openmpi/openmpi-mca-params.conf']),
		rawFromFixture(s, 'env'), rawFromFixture(s, 'which'), rawFromFixture(s, 'identity'),
		rawMissing('nvidia_smi_topo'), rawMissing('nvidia_smi_xml'),
		rawFromFixture(s, 'engine', 'engine.txt', ['mpirun.openmpi', '--allow-run-as-root', '--oversubscribe', '--mca', 'btl_tcp_if_include', 'lo', '-np', '2', './native/build/engine-openmpi/gpumpi', 'inspect']),
		rawFromFixture(s, 'probe'),
	];
}

/** The Debian machine seen through MPICH: mpichversion, UCX and the engine built against MPICH. */
export function debianMpichRaw(): RawOutput[] {
	const s = 'debian12-cpu';
	return [
		rawFromFixture(s, 'mpichversion'),
		rawFromFixture(s, 'ucx_info_v'), rawFromFixture(s, 'ucx_info_b'), rawFromFixture(s, 'ucx_info_d'),
		rawFromFixture(s, 'engine', 'engine_mpich.txt', ['mpirun.mpich', '-np', '2', 'gpumpi', 'inspect']),
	];
}

/** Everything captured on the H200 testbed, as RawOutput[]. */
export function h200Raw(): RawOutput[] {
	const s = 'h200-testbed';
	return [
		rawFromFixture(s, 'ompi_info', 'ompi_info.txt', ['ompi_info', '--parsable', '--all']),
		rawFromFixture(s, 'mpirun_version'),
		rawFromFixture(s, 'ucx_info_v'), rawFromFixture(s, 'ucx_info_b'), rawFromFixture(s, 'ucx_info_d'),
		rawFromFixture(s, 'nvidia_smi_topo'), rawFromFixture(s, 'nvidia_smi_xml'), rawFromFixture(s, 'env'),
		rawFromFixture(s, 'sys_module_nvidia'),
	];
}

/** Real `gpumpi inspect` documents captured on the H200 device (test-fixtures/engine/h200-testbed/README.md). */
export const ENGINE_FIXTURES = path.resolve(process.cwd(), 'test-fixtures', 'engine', 'h200-testbed');

/** The mpirun argv each H200 engine capture was made with (from the README there). */
const H200_ENGINE_COMMANDS: Record<string, string[]> = {
	'inspect-np1.json': ['mpirun', '--allow-run-as-root', '--oversubscribe', '--mca', 'mca_base_component_path', '/opt/testbed2/lib/openmpi', '-np', '1', 'gpumpi', 'inspect'],
	'inspect-np4.json': ['mpirun', '--allow-run-as-root', '--oversubscribe', '--mca', 'mca_base_component_path', '/opt/testbed2/lib/openmpi', '-np', '4', 'gpumpi', 'inspect'],
	'inspect-np4-nocp.json': ['mpirun', '--allow-run-as-root', '--oversubscribe', '-np', '4', 'gpumpi', 'inspect'],
	'inspect-np1-verbose.json': ['mpirun', '--allow-run-as-root', '--oversubscribe', '--mca', 'mca_base_component_path', '/opt/testbed2/lib/openmpi', '--mca', 'accelerator_base_verbose', '100', '-np', '1', 'gpumpi', 'inspect'],
};

/** One real H200 engine capture as the collector's `engine` RawOutput (stdout = the file, command = how it was run). */
export function h200Engine(file: 'inspect-np1.json' | 'inspect-np4.json' | 'inspect-np4-nocp.json' | 'inspect-np1-verbose.json', stderr = ''): RawOutput {
	return { id: 'engine', command: H200_ENGINE_COMMANDS[file], exitCode: 0, stdout: fs.readFileSync(path.join(ENGINE_FIXTURES, file), 'utf8'), stderr, durationMs: 1 };
}

/** The seed report: only its plain ompi_info exists. */
export function seedRaw(): RawOutput[] {
	return [rawFromFixture('seed-ipc-report', 'ompi_info', 'ompi_info_plain.txt', ['ompi_info'])];
}

/**
 * One run of an H200 `scripts/gpu/inspect.sh` capture ("gpumpi.gpu-inspect-runs/1", e.g. inspect-2026-12-03-ns-mps.json,
 * whose engine has the namespace / MPS / compute-mode fields) as the collector's `engine` RawOutput: stdout = that run's
 * rank-0 document, command = the argv it was run with.
 */
export function h200EngineRun(file: 'inspect-2026-12-03-ns-mps.json' | 'inspect-2026-12-04-affinity.json' | 'inspect-2026-12-04-dmabuf.json', run: 'np1' | 'np4' | 'np4-nocp' | 'np1-verbose' | 'np2-bind-core' | 'np2-bind-none', stderr = ''): RawOutput {
	const doc = JSON.parse(fs.readFileSync(path.join(ENGINE_FIXTURES, file), 'utf8')) as { runs: { name: string; argv: string[]; exit_code: number; document: unknown }[] };
	const r = doc.runs.find((x) => x.name === run);
	if (!r || r.document === null) { throw new Error(`${file} has no document for run ${run}`); }
	return { id: 'engine', command: r.argv, exitCode: r.exit_code, stdout: JSON.stringify(r.document), stderr, durationMs: 1 };
}

/** The GPU machine's document (scripts/gpu/silentData.sh), once the integrator copied it here (README there). */
export interface SilentDataDoc {
	readelf: { d: string | null; s_cudaFree: string | null };
	ucx_info: { c_hook_reloc: string; v_dmabuf_no: string };
	ucx120: { v: string; d: string; c: string } | null;
	fi_info: { installed: boolean; version?: { rc: number; stdout: string }; hmem?: { rc: number; stdout: string; stderr: string }; plain?: { rc: number; stdout: string } };
	runs: { setting: string; alloc: string; trial: number; rc: number; result: string }[];
}
export function silentDataDoc(): SilentDataDoc | null {
	const f = path.join(FIXTURES, 'gpu-silentdata', 'silentData.json');
	return fs.existsSync(f) ? JSON.parse(fs.readFileSync(f, 'utf8')) as SilentDataDoc : null;
}

