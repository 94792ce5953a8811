/**
 * Problems-panel mapping on the real Debian 12 capture: its /etc/openmpi/openmpi-mca-params.conf has "pml = ^ucx"
 * at line 69 (Debian's packaging), so the pml rule's finding lands on that line with a "set pml = ucx" quick fix
 * (from the rule's own fix command) and a "comment out" one; evidence from tool output maps to that raw output's line.
 */
import * as assert from 'node:assert/strict';
import { analyze } from '../../extension/core/analyze';
import { diagnosticsOf, evidenceFile, evidenceTarget, fixValueFor } from '../../extension/shared/findingLocations';
import type { RawOutput, Report } from '../../extension/shared/report';
import { debianRaw } from './rules/fixtureRaw';

function reportOf(raw: RawOutput[], kind: 'local' | 'ssh' | 'bundle'): Pick<Report, 'findings' | 'raw' | 'host'> {
	const { findings } = analyze(raw, 'debian');
	return { findings, raw, host: { id: 'h', label: 'h', kind } };
}

describe('finding locations (Problems panel, quick fixes, evidence links)', () => {
	it('the pml = ^ucx line of the Debian MCA parameter file becomes a diagnostic with two quick fixes', () => {
		const specs = diagnosticsOf(reportOf(debianRaw(), 'local'));
		const pml = specs.find(s => s.findingId === 'ompi-pml-ucx-disabled-by-param-file');
		assert.ok(pml, `no pml diagnostic among ${specs.map(s => s.findingId).join(', ')}`);
		assert.equal(pml.path, '/etc/openmpi/openmpi-mca-params.conf');
		assert.equal(pml.line, 69);
		assert.match(pml.message, /pml ucx is disabled/);
		assert.ok(pml.sourceUrl?.startsWith('https://'));
		assert.deepEqual(pml.edits.map(e => e.replacement.split('   #')[0]), ['pml = ucx', '# pml = ^ucx']);
		assert.equal(pml.edits[0].expected, 'pml = ^ucx');
		assert.deepEqual(pml.edits.map(e => e.preferred), [true, false]);
		// Every diagnostic is a line of a file, once per (file, line, finding).
		const keys = specs.map(s => `${s.path}:${s.line}:${s.findingId}`);
		assert.equal(new Set(keys).size, keys.length);
		assert.ok(specs.every(s => s.path.startsWith('/') && s.line >= 1));
	});

	it('an SSH host or a bundle gives no diagnostics: those files are not on this machine', () => {
		assert.deepEqual(diagnosticsOf(reportOf(debianRaw(), 'ssh')), []);
		assert.deepEqual(diagnosticsOf(reportOf(debianRaw(), 'bundle')), []);
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
	});

	it('a commented-out or malformed line gets no edit', () => {
		const report = reportOf(debianRaw(), 'local');
		const f = report.findings.find(x => x.id === 'ompi-pml-ucx-disabled-by-param-file')!;
		const withComment = { ...report, findings: [{ ...f, evidence: [{ source: 'mca_params:/etc/a.conf', line: '# pml = ^ucx', lineNo: 3 }, { source: 'mca_params:/etc/a.conf', line: 'garbage', lineNo: 4 }] }] };
		const specs = diagnosticsOf(withComment);
		assert.equal(specs.length, 2);
		assert.deepEqual(specs.map(s => s.edits.length), [0, 0]);
	});
});
