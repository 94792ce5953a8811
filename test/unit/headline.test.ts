/**
 * The headline verdict on real captured reports: the Debian CPU machine (no CUDA driver, non-CUDA Open MPI), the
 * H200 testbed as the headless CLI reported it (Open MPI 5.0.7 not CUDA-aware at run time), the H200 engine with the
 * component path that makes it CUDA-aware, the seed's plain ompi_info (built with CUDA, no engine), and ssh 9.2's
 * real "Could not resolve hostname" stderr. The no-MPI case uses the collector's own "not found" records (what
 * collect() writes when no MPI tool is on PATH). Each case also goes through the text report and the HTML.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { analyze } from '../../extension/core/analyze';
import { classifySshFailure } from '../../extension/core/hosts/sshHost';
import { connectOutput } from '../../extension/core/unreachable';
import { reportHeadline, type Headline } from '../../extension/shared/headline';
import { renderReportHtml } from '../../extension/shared/render';
import { REPORT_SCHEMA, type RawOutput, type Report } from '../../extension/shared/report';
import { renderReportText } from '../../extension/cli/textReport';
import { debianRaw, h200Engine, h200Raw, rawMissing, seedRaw } from './rules/fixtureRaw';

/** A Report exactly as inspect() assembles it from raw outputs. */
function reportOf(raw: RawOutput[], label: string): Report {
	const { facts, findings, summary } = analyze(raw, label);
	const engine = facts.engine?.document ?? null;
	const host = { id: label, label, kind: 'local' as const };
	return {
		schema: REPORT_SCHEMA, tool: { name: 'gpumpi-doctor', version: 'test' }, createdAt: '2026-12-03T00:00:00Z', host, summary,
		headline: reportHeadline({ host, summary, findings, raw, engine }), findings, facts, raw, engine, probe: null, elapsedMs: 1,
	};
}

const refs = (h: Headline): string[] => h.evidence.map(e => e.ref);

/** The headline is the first thing in the HTML and the text report, and both carry its evidence. */
function assertShownFirst(r: Report): void {
	const html = renderReportHtml(r);
	assert.ok(html.indexOf('id="headline"') > 0 && html.indexOf('id="headline"') < html.indexOf('id="summary"'), 'headline before summary');
	assert.match(html, new RegExp(`data-verdict="${r.headline!.verdict}"`));
	for (const ref of refs(r.headline!)) { assert.ok(html.includes(`data-ref="${ref}"`), `HTML lacks evidence ${ref}`); }
	const text = renderReportText(r).split('\n');
	assert.equal(text[2], `VERDICT  ${r.headline!.text}`);
	for (const ref of refs(r.headline!)) { assert.ok(text.some(l => l.startsWith(`  based on ${ref}: `)), `text lacks evidence ${ref}`); }
}

describe('headline verdict', () => {
	it('Debian CPU machine: no CUDA driver, so nothing to check, and says what its MPI is', () => {
		const r = reportOf(debianRaw(), 'vm');
		const h = r.headline!;
		assert.equal(h.verdict, 'not-checked');
		assert.equal(h.text, 'No GPU here: no CUDA driver (libcuda.so.1 could not be loaded), so GPU buffers cannot be checked on vm (the MPI itself: built without CUDA support)');
		assert.deepEqual(refs(h), ['engine.ranks[].cuda.driver_loaded', 'finding:no-gpu-visible', 'engine.ranks[0].mpi.cuda_aware.compile_time']);
		assert.match(h.evidence[0].text, /false in 2 rank\(s\): libcuda\.so\.1: cannot open shared object file/);
		assertShownFirst(r);
	});

	it('H200 testbed as the CLI reported it: not CUDA-aware at run time, because of the first error finding', () => {
		const file = path.resolve(process.cwd(), 'test-fixtures', 'cli', 'h200-testbed', 'cli-2026-12-02.json');
		const captured = (JSON.parse(fs.readFileSync(file, 'utf8')) as { runs: { name: string; doc: Report }[] }).runs.find(x => x.name === 'inspect')!.doc;
		assert.equal(captured.headline, undefined, 'the capture predates the headline: it is derived from its facts and findings');
		const h = reportHeadline(captured);
		assert.equal(h.verdict, 'fails');
		assert.equal(h.text, 'GPU buffers will NOT work with this MPI: not CUDA-aware at run time, because MCA component path overridden by the environment');
		assert.deepEqual(refs(h), ['engine.ranks[0].mpi.cuda_aware.run_time', 'finding:ompi-component-path-overridden']);
		assert.equal(h.evidence[0].text, 'false (MPIX_Query_cuda_support)');
		// The old report renders with the derived headline too (the panel reopens saved reports).
		assertShownFirst({ ...captured, headline: h });
		assert.ok(renderReportHtml(captured).includes('because MCA component path overridden by the environment'));
	});

	it('H200 testbed with the component path: CUDA-aware at run time and no error finding, so device pointers are accepted', () => {
		const r = reportOf([...h200Raw(), h200Engine('inspect-np1.json')], 'vm');
		const h = r.headline!;
		assert.deepEqual(r.findings.filter(f => f.severity === 'error').map(f => f.id), []);
		assert.equal(h.verdict, 'works');
		assert.equal(h.text, 'GPU buffers: MPI accepts device pointers here (run time check) — see the reproducers for what it does with them');
		assert.deepEqual(h.evidence, [{ ref: 'engine.ranks[0].mpi.cuda_aware.run_time', text: 'true (MPIX_Query_cuda_support)' }]);
		assertShownFirst(r);
	});

	it('the same capture with an error finding beside it: accepted, but the error is said (the at-risk case)', () => {
		const r = reportOf([...h200Raw(), h200Engine('inspect-np1.json')], 'vm');
		// Synthetic: one error finding added to the real capture's findings (no captured report has both).
		const findings = [...r.findings, { id: 'gpu-compute-mode-exclusive', severity: 'error' as const, title: 'GPU compute mode allows one process, several ranks share the GPU', message: '', evidence: [] }];
		const h = reportHeadline({ ...r, findings });
		assert.equal(h.verdict, 'at-risk');
		assert.equal(h.text, 'GPU buffers may fail here: MPI accepts device pointers (run time check), but GPU compute mode allows one process, several ranks share the GPU');
		assert.deepEqual(refs(h), ['engine.ranks[0].mpi.cuda_aware.run_time', 'finding:gpu-compute-mode-exclusive']);
	});

	it('seed report (plain ompi_info only): built with CUDA, device pointers not checked', () => {
		const r = reportOf(seedRaw(), 'raven');
		const h = r.headline!;
		assert.equal(r.summary.mpi.cudaAware, 'yes');
		assert.equal(h.verdict, 'not-checked');
		assert.equal(h.text, 'GPU buffers: this MPI is built with CUDA, but whether it accepts device pointers was not checked (the engine did not run)');
		assert.deepEqual(refs(h), ['summary.mpi.cudaAware']);
		assertShownFirst(r);
	});

	it('unreachable host (ssh 9.2\'s real stderr): could not check, with the reason, and no verdict on its MPI', () => {
		const stderr = 'ssh: Could not resolve hostname nohost.invalid: Name or service not known\r\n';
		const c = classifySshFailure('nohost.invalid', stderr, 10);
		const raw = [connectOutput({ ok: false, kind: c.kind, error: c.message, label: 'host name not resolved', stderr, command: ['ssh', '--', 'nohost.invalid'], durationMs: 20 })];
		const r = reportOf(raw, 'nohost.invalid');
		const h = r.headline!;
		assert.equal(h.verdict, 'not-checked');
		assert.equal(h.text, 'Could not check nohost.invalid: cannot reach it (host name not resolved) — nothing was run there');
		assert.deepEqual(refs(h), ['finding:host-unreachable', 'connect']);
		assert.doesNotMatch(h.text, /MPI/);
		assertShownFirst(r);
	});

	it('no MPI on PATH: nothing to check yet, load an MPI', () => {
		const which: RawOutput = { id: 'which', command: ['which'], exitCode: 0, stdout: 'mpirun=\nmpiexec=\nompi_info=\nmpicc=\n', stderr: '', durationMs: 1 };
		const r = reportOf([rawMissing('ompi_info'), rawMissing('mpirun_version'), rawMissing('mpichversion'), which], 'fresh');
		assert.ok(r.findings.some(f => f.id === 'mpi-not-found'), r.findings.map(f => f.id).join());
		assert.equal(r.headline!.verdict, 'not-checked');
		assert.match(r.headline!.text, /^No MPI found here: nothing to check yet \(load an MPI module/);
		assert.deepEqual(refs(r.headline!), ['finding:mpi-not-found']);
		assertShownFirst(r);
	});

	it('is total: an empty or malformed report still gets a headline that claims nothing', () => {
		for (const bad of [{}, { findings: 'x', engine: { ranks: 'y' } }, { summary: { mpi: null } }] as unknown[]) {
			const h = reportHeadline(bad as Report);
			assert.equal(h.verdict, 'not-checked');
			assert.match(h.text, /^Could not tell whether GPU buffers work here/);
		}
	});
});
