/**
 * Tools that are simply not there are reported once, as not installed, not as "Could not fully read …" parse problems
 * (core/analyze.ts `tools-not-installed`, core/parsers/buildFacts.ts absentTools). Input: the raw outputs of a real
 * `gpumpi-doctor inspect --json` with no MPI on PATH, before and after the engine was built (test-fixtures/tools/
 * debian12-nompi: before this change each report had three parse-problem infos, for ompi_info, mpirun_version and the
 * engine). A real parse problem (a tool
 * that ran and timed out, failed, or printed what cannot be read) stays one; a host that lacks only the tools of other
 * stacks (mpichversion on Open MPI, nvidia-smi without a GPU) gets no such finding.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { analyze, NOT_INSTALLED_ID } from '../../extension/core/analyze';
import { reportHeadline } from '../../extension/shared/headline';
import type { Finding, RawOutput, Report } from '../../extension/shared/report';
import { debianMpichRaw, debianRaw, rawMissing } from './rules/fixtureRaw';

const NOMPI = path.resolve(process.cwd(), 'test-fixtures', 'tools', 'debian12-nompi');
const capture = (name: string): RawOutput[] => JSON.parse(fs.readFileSync(path.join(NOMPI, name), 'utf8')) as RawOutput[];
const of = (raw: RawOutput[], id: string): Finding[] => analyze(raw, 'vm').findings.filter((f) => f.id === id);

describe('tools that are not installed: one finding, not parse problems', () => {
	it('the real no-MPI inspection: the capture is what it says (nothing on PATH, the engine not built)', () => {
		const raw = capture('raw-engine-not-built.json');
		for (const id of ['ompi_info', 'mpirun_version', 'mpichversion', 'ucx_info_v', 'nvidia_smi_xml']) {
			const r = raw.find((x) => x.id === id);
			assert.deepEqual([r?.exitCode, r?.error], [null, 'not found on PATH'], id);
		}
		assert.match(raw.find((x) => x.id === 'engine')?.error ?? '', /^engine not built: tried /);
		assert.equal(raw.find((x) => x.id === 'env')?.stdout, 'PATH=/tmp/hcli/nompi:/usr/sbin\n');
	});

	it('the real no-MPI inspection: no parse problem, one "not installed" naming every missing tool once, "No MPI found" still first', () => {
		const a = analyze(capture('raw-engine-not-built.json'), 'vm');
		assert.deepEqual(a.findings.filter((f) => f.id === 'parse-problem').map((f) => f.title), []);
		const f = a.findings.filter((x) => x.id === NOT_INSTALLED_ID);
		assert.equal(f.length, 1);
		assert.equal(f[0].severity, 'info');
		assert.equal(f[0].title, 'Not installed: ompi_info, mpirun, mpichversion, ucx_info, nvidia-smi, the gpumpi engine');
		assert.match(f[0].message, /^Looked for and not there: ompi_info, mpirun, mpichversion, ucx_info, nvidia-smi \(not found on PATH\); the gpumpi engine \(not built: tried \/work\/wt\/h-cli\/native\/build\/engine\/gpumpi, /);
		assert.match(f[0].message, /not on PATH \(a module not loaded\)/);
		assert.deepEqual(f[0].evidence.map((e) => [e.source, e.line]), [
			['ompi_info', 'ompi_info --parsable --all: not found on PATH'],
			['mpirun_version', 'mpirun --version: not found on PATH'],
			['mpichversion', 'mpichversion: not found on PATH'],
			['ucx_info_v', 'ucx_info -v: not found on PATH'],
			['nvidia_smi_topo', 'nvidia-smi topo -m: not found on PATH'],
			['engine', `mpirun -np 1 <gpumpi engine> inspect --framed: ${capture('raw-engine-not-built.json').find((x) => x.id === 'engine')!.error}`],
		]);
		assert.ok(a.findings.some((x) => x.id === 'mpi-not-found' && x.severity === 'error'));
		const report = { ...a, findings: a.findings, summary: a.summary } as unknown as Report;
		assert.match(reportHeadline(report).text, /^No MPI found here: nothing to check yet/);
	});

	it('the real no-MPI inspection with the engine built: the engine is named with its reason, mpirun not on PATH', () => {
		const raw = capture('raw-no-mpirun.json');
		assert.deepEqual(raw.find((r) => r.id === 'engine')?.command.slice(0, 3), ['mpirun', '-np', '1']);
		const [f, ...more] = of(raw, NOT_INSTALLED_ID);
		assert.equal(more.length, 0);
		assert.equal(f.title, 'Not installed: ompi_info, mpirun, mpichversion, ucx_info, nvidia-smi, the gpumpi engine');
		assert.match(f.message, /\(not found on PATH\); the gpumpi engine \(mpirun not found on PATH\)\. /);
		assert.deepEqual(of(raw, 'parse-problem'), []);
	});

	it('a real parse problem stays one, and that tool is not called missing', () => {
		const base = capture('raw-engine-not-built.json');
		const ompi = base.find((r) => r.id === 'ompi_info')!;
		for (const [what, broken, says] of [
			['timed out', { ...ompi, error: 'timed out after 60 s', timedOut: true }, /ompi_info --parsable --all: timed out after 60 s/],
			['failed', { ...ompi, exitCode: 1, error: undefined, stderr: 'ompi_info: Error: unknown option\n' }, /ompi_info printed nothing/],
			['unreadable', { ...ompi, exitCode: 0, error: undefined, stdout: '\u0001\u0002 not ompi_info output \u0003\n' }, /looks binary or corrupted/],
		] as Array<[string, RawOutput, RegExp]>) {
			const raw = base.map((r) => (r.id === 'ompi_info' ? broken : r));
			const problems = of(raw, 'parse-problem');
			assert.deepEqual(problems.map((p) => p.title), ['Could not fully read ompi_info'], what);
			assert.match(problems[0].message, says, what);
			const [f] = of(raw, NOT_INSTALLED_ID);
			assert.equal(f.title, 'Not installed: mpirun, mpichversion, ucx_info, nvidia-smi, the gpumpi engine', what);
		}
	});

	it('only other stacks\' tools missing (mpichversion, nvidia-smi on an Open MPI host): no finding, as before', () => {
		const raw = [...debianRaw().filter((r) => r.id !== 'mpichversion'), rawMissing('mpichversion')];
		assert.ok(raw.some((r) => r.id === 'nvidia_smi_xml' && r.exitCode === null));
		assert.deepEqual(of(raw, NOT_INSTALLED_ID), []);
		assert.deepEqual(of(raw, 'parse-problem'), []);
	});

	it('an MPICH host without Open MPI\'s ompi_info: named as not installed, not a parse problem', () => {
		const raw = [...debianMpichRaw(), { ...rawMissing('ompi_info'), command: ['ompi_info', '--parsable', '--all'], error: 'not found on PATH' }];
		assert.equal(of(raw, NOT_INSTALLED_ID)[0]?.title, 'Not installed: ompi_info');
		assert.deepEqual(of(raw, 'parse-problem'), []);
	});
});
