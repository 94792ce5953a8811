/**
 * Problems-panel mapping on the real Debian 12 capture: its /etc/openmpi/openmpi-mca-params.conf has "pml = ^ucx"
 * at line 69 (Debian's packaging), so the pml rule's finding lands on that line; its "set pml = ucx" / "comment out"
 * edits only where pml ucx can be selected (not on that machine: its pml_ucx_tls defaults refuse UCX's transports);
 * every other finding sits on the host's findings document; evidence from tool output maps to that raw output's line.
 */
import * as assert from 'node:assert/strict';
import { analyze } from '../../extension/core/analyze';
import { diagnosticsOf, evidenceFile, evidenceTarget, fixValueFor, mcaParamsOf, reportDocument } from '../../extension/shared/findingLocations';
import type { RawOutput, Report } from '../../extension/shared/report';
import { debianRaw } from './rules/fixtureRaw';

function reportOf(raw: RawOutput[], kind: 'local' | 'ssh' | 'bundle'): Pick<Report, 'findings' | 'raw' | 'host'> {
	const { findings } = analyze(raw, 'debian');
	return { findings, raw, host: { id: 'h', label: 'h', kind } };
}

describe('finding locations (Problems panel, quick fixes, evidence links)', () => {
	it('the pml = ^ucx line of the Debian MCA parameter file is a diagnostic; where pml ucx refuses every transport, no line edit (the fix needs more)', () => {
		const report = reportOf(debianRaw(), 'local');
		const specs = diagnosticsOf(report);
		const pml = specs.find(s => s.findingId === 'ompi-pml-ucx-disabled-by-param-file');
		assert.ok(pml, `no pml diagnostic among ${specs.map(s => s.findingId).join(', ')}`);
		assert.equal(pml.path, '/etc/openmpi/openmpi-mca-params.conf');
		assert.equal(pml.line, 69);
		assert.match(pml.message, /pml ucx is disabled/);
		assert.ok(pml.sourceUrl?.startsWith('https://'));
		// The same inspection says pml ucx refuses UCX's transports here (ompi-pml-ucx-transport-defaults): "pml = ucx"
		// alone would make every run fail, so the finding's fix carries pml_ucx_tls / pml_ucx_devices and the line gets no edit.
		assert.ok(report.findings.some(f => f.id === 'ompi-pml-ucx-transport-defaults'));
		assert.deepEqual(mcaParamsOf(pml.fixCommand).sort(), ['pml', 'pml_ucx_devices', 'pml_ucx_tls']);
		assert.deepEqual(pml.edits, []);
		// One entry per finding, in report order: file lines where there is one, the findings document's line otherwise.
		assert.deepEqual(specs.map(s => s.findingIndex), report.findings.map((_, i) => i));
		assert.ok(specs.every(s => (s.path === null ? s.line === s.findingIndex + 1 : s.path.startsWith('/') && s.line >= 1)));
	});

	it('where pml ucx can be selected (the same capture with pml_ucx_tls = any, edited here), the line gets "set pml = ucx" and "comment out"', () => {
		const raw = debianRaw().map(r => r.id === 'ompi_info' ? { ...r, stdout: r.stdout.replace(/^(mca:pml:ucx:param:pml_ucx_tls:value:).*$/m, '$1any').replace(/^(mca:pml:ucx:param:pml_ucx_devices:value:).*$/m, '$1any') } : r);
		const report = reportOf(raw, 'local');
		assert.ok(!report.findings.some(f => f.id === 'ompi-pml-ucx-transport-defaults'), 'the edit took');
		const pml = diagnosticsOf(report).find(s => s.findingId === 'ompi-pml-ucx-disabled-by-param-file');
		assert.deepEqual(pml?.edits.map(e => e.replacement.split('   #')[0]), ['pml = ucx', '# pml = ^ucx']);
		assert.equal(pml?.edits[0].expected, 'pml = ^ucx');
		assert.deepEqual(pml?.edits.map(e => e.preferred), [true, false]);
	});

	it('the findings document has one line per finding after its heading, headline and counts', () => {
		const report = { ...reportOf(debianRaw(), 'ssh'), createdAt: '2026-12-06T00:00:00Z', headline: { text: 'line\nbreak' } };
		const doc = reportDocument(report, '0 errors, 3 warnings, 4 info');
		const lines = doc.text.split('\n');
		assert.equal(lines[1], 'line break', 'one line, whatever the text');
		assert.equal(lines[2], 'Findings: 0 errors, 3 warnings, 4 info');
		report.findings.forEach((f, i) => assert.ok(lines[doc.lineOf(i) - 1].includes(`(${f.id})`), `line ${doc.lineOf(i)}: ${lines[doc.lineOf(i) - 1]}`));
	});

	it('an SSH host or a bundle gives no file lines (those files are not on this machine): every finding is on the findings document', () => {
		for (const kind of ['ssh', 'bundle'] as const) {
			const r = reportOf(debianRaw(), kind);
			const specs = diagnosticsOf(r, i => 10 + i);
			assert.equal(specs.length, r.findings.length);
			assert.ok(specs.every(s => s.path === null && s.line === 10 + s.findingIndex && s.edits.length === 0));
		}
		// ... but the same evidence still points into the raw output the file was read into.
		const ev = { source: 'mca_params:/etc/openmpi/openmpi-mca-params.conf', line: 'pml = ^ucx', lineNo: 69 };
		assert.deepEqual(evidenceTarget(ev, debianRaw(), 'ssh'), { kind: 'raw', rawId: ev.source, stream: 'stdout', line: 69 });
	});

	it('evidence from tool output picks the stream whose line is the quoted one', () => {
		const raw: RawOutput[] = [{ id: 'ssh_connect', command: ['ssh'], exitCode: 255, stdout: 'x\n', stderr: 'a\nssh: Could not resolve hostname nohost\n', durationMs: 1 }];
		assert.deepEqual(evidenceTarget({ source: 'ssh_connect', line: 'ssh: Could not resolve hostname nohost', lineNo: 2 }, raw, 'local'),
			{ kind: 'raw', rawId: 'ssh_connect', stream: 'stderr', line: 2 });
		assert.deepEqual(evidenceTarget({ source: 'ssh_connect', line: 'whatever' }, raw, 'local'), { kind: 'raw', rawId: 'ssh_connect', stream: 'stdout' });
		assert.equal(evidenceTarget({ source: 'engine', line: 'x', lineNo: 1 }, raw, 'local'), null, 'no such raw output');
		assert.equal(evidenceTarget({ source: '/etc/x.conf', line: 'x', lineNo: 0 }, raw, 'local'), null, 'line 0 is no line');
		assert.equal(evidenceTarget(null as never, raw, 'local'), null);
	});

	it('files: MCA parameter sources and absolute paths only', () => {
		assert.equal(evidenceFile('mca_params:/home/u/.openmpi/mca-params.conf'), '/home/u/.openmpi/mca-params.conf');
		assert.equal(evidenceFile('/etc/environment'), '/etc/environment');
		assert.equal(evidenceFile('env'), null);
		assert.equal(evidenceFile('mca_params:relative.conf'), null);
	});

	it('fix values from --mca and OMPI_MCA_ forms, none from other parameters', () => {
		assert.equal(fixValueFor('pml', 'mpirun --mca pml ucx ...   # or: export OMPI_MCA_pml=ucx'), 'ucx');
		assert.equal(fixValueFor('pml', 'export OMPI_MCA_pml=ucx'), 'ucx');
		assert.equal(fixValueFor('btl', 'mpirun --mca pml ucx'), null);
		assert.equal(fixValueFor('pml', 'mpirun --mca pml --oops'), null);
		assert.equal(fixValueFor('pml', undefined), null);
		assert.equal(fixValueFor('pml', 'export OMPI_MCA_pml= ; mpirun -mca pml ob1'), 'ob1');
	});

	it('the parameters a fix sets: both forms, once each, a name without a value still counted', () => {
		assert.deepEqual(mcaParamsOf('mpirun --mca pml ucx -mca btl ^vader   # or: export OMPI_MCA_pml=ucx OMPI_MCA_pml_ucx_tls=any'), ['pml', 'btl', 'pml_ucx_tls']);
		assert.deepEqual(mcaParamsOf('mpirun --mca pml --oops OMPI_MCA_x='), ['pml', 'x']);
		assert.deepEqual(mcaParamsOf('mpirun --mca --pml ucx'), []);
		assert.deepEqual(mcaParamsOf(undefined), []);
	});

	it('a commented-out or malformed line gets no edit', () => {
		const report = reportOf(debianRaw(), 'local');
		const f = report.findings.find(x => x.id === 'ompi-pml-ucx-disabled-by-param-file')!;
		const withComment = { ...report, findings: [{ ...f, evidence: [{ source: 'mca_params:/etc/a.conf', line: '# pml = ^ucx', lineNo: 3 }, { source: 'mca_params:/etc/a.conf', line: 'garbage', lineNo: 4 }] }] };
		const specs = diagnosticsOf(withComment);
		assert.equal(specs.length, 1, 'one entry per finding');
		assert.deepEqual(specs.map(s => [s.line, s.edits.length]), [[3, 0]]);
	});
});
