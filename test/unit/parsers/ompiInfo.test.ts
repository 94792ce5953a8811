/**
 * ompi_info parser on real captured outputs: Debian 12 (parsable, Open MPI 4.1.4), the H200 testbed (parsable and
 * plain, Open MPI 5.0.7) and the seed report (plain, mail-wrapped, Open MPI 5.0.10).
 */
import * as assert from 'node:assert/strict';
import { componentsOf, mcaParam, parseOmpiInfo } from '../../../extension/core/parsers/ompiInfo';
import { parseMcaParamFile } from '../../../extension/core/parsers/mcaParams';
import { fixtureText } from '../rules/fixtureRaw';

describe('parseOmpiInfo', () => {
	it('reads Debian 12 ompi_info --parsable --all (Open MPI 4.1.4, no CUDA)', () => {
		const { facts, issues } = parseOmpiInfo(fixtureText('debian12-cpu', 'ompi_info.txt'));
		assert.ok(facts);
		assert.equal(facts.format, 'parsable');
		assert.equal(facts.version?.value, '4.1.4');
		assert.equal(facts.version?.evidence.lineNo, 2);
		assert.equal(facts.prefix?.value, '/usr');
		assert.equal(facts.builtWithCuda?.value, false);
		assert.equal(facts.builtWithCudaBasis, 'parameter');
		assert.match(facts.builtWithCuda?.evidence.line ?? '', /built_with_cuda_support:value:false/);
		assert.ok(componentsOf(facts, 'pml').some((c) => c.name === 'ucx' && c.version === '4.1.4'));
		assert.ok(componentsOf(facts, 'btl').some((c) => c.name === 'vader'));
		assert.equal(componentsOf(facts, 'btl').some((c) => c.name === 'smcuda'), false);
		const tls = mcaParam(facts, 'pml_ucx_tls');
		assert.equal(tls?.value, 'rc_verbs,ud_verbs,rc_mlx5,dc_mlx5,ud_mlx5,cuda_ipc,rocm_ipc');
		assert.equal(tls?.evidence.lineNo, 8493);
		assert.equal(mcaParam(facts, 'pml_ucx_devices')?.value, 'mlx*');
		const pml = mcaParam(facts, 'pml');
		assert.equal(pml?.value, '^ucx');
		assert.equal(pml?.source, 'file (/etc/openmpi/openmpi-mca-params.conf:69)');
		assert.equal(facts.configuredWithCuda, null);
		assert.equal(facts.configuredWithUcx?.value, '--with-ucx');
		assert.equal(facts.pkglibdir?.value, '/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3');
		assert.deepEqual(issues, []);
	});

	it('reads the H200 testbed ompi_info --parsable --all (Open MPI 5.0.7 with CUDA and UCX)', () => {
		const { facts, issues } = parseOmpiInfo(fixtureText('h200-testbed', 'ompi_info.txt'));
		assert.ok(facts);
		assert.equal(facts.version?.value, '5.0.7');
		assert.equal(facts.prefix?.value, '/opt/testbed2');
		assert.equal(facts.builtWithCuda?.value, true);
		assert.equal(facts.configuredWithCuda?.value, '--with-cuda=/usr/local/cuda');
		assert.equal(facts.configuredWithUcx?.value, '--with-ucx=/opt/testbed2');
		assert.deepEqual(componentsOf(facts, 'accelerator').map((c) => c.name).sort(), ['cuda', 'null']);
		assert.ok(componentsOf(facts, 'btl').some((c) => c.name === 'smcuda'));
		assert.ok(componentsOf(facts, 'pml').some((c) => c.name === 'ucx'));
		assert.equal(mcaParam(facts, 'mca_base_component_path')?.value, '"/opt/testbed2/lib/openmpi:/root/.openmpi/components"');
		assert.deepEqual(issues, []);
	});

	it('reads the H200 testbed plain ompi_info', () => {
		const { facts } = parseOmpiInfo(fixtureText('h200-testbed', 'ompi_info_plain.txt'));
		assert.ok(facts);
		assert.equal(facts.format, 'plain');
		assert.equal(facts.version?.value, '5.0.7');
		assert.equal(facts.prefix?.value, '/opt/testbed2');
		assert.equal(facts.configuredWithCuda?.value, '--with-cuda=/usr/local/cuda');
		assert.equal(facts.builtWithCuda?.value, true);
		assert.equal(facts.builtWithCudaBasis, 'components');
		assert.ok(componentsOf(facts, 'pml').some((c) => c.name === 'ucx' && c.version === '5.0.7'));
	});

	it('reads the seed report\'s mail-wrapped plain ompi_info (Open MPI 5.0.10)', () => {
		const { facts, issues } = parseOmpiInfo(fixtureText('seed-ipc-report', 'ompi_info_plain.txt'));
		assert.ok(facts);
		assert.equal(facts.format, 'plain');
		assert.equal(facts.version?.value, '5.0.10');
		assert.match(facts.prefix?.value ?? '', /openmpi-5\.0\.10-wukilk7fbicbyktcg5e5ftnb5b7fusvd$/);
		// The configure line is wrapped over many mail lines: --with-cuda= is on a continuation line.
		assert.match(facts.configuredWithCuda?.value ?? '', /^--with-cuda=\/ravenfs\/.*cuda-12\.9\.1-/);
		assert.match(facts.configuredWithCuda?.evidence.line ?? '', /^'--with-cuda=/);
		assert.match(facts.configuredWithUcx?.value ?? '', /ucx-1\.20\.0-/);
		assert.ok(componentsOf(facts, 'pml').some((c) => c.name === 'ucx' && c.version === '5.0.10'));
		// "MCA backtrace: execinfo (... Component" + "v5.0.10)" on the next mail line is one component.
		const bt = componentsOf(facts, 'backtrace');
		assert.deepEqual(bt.map((c) => [c.name, c.version]), [['execinfo', '5.0.10']]);
		assert.ok(componentsOf(facts, 'accelerator').some((c) => c.name === 'cuda'));
		assert.equal(facts.builtWithCuda?.value, true);
		assert.equal(facts.mpiExtensions?.value, 'affinity, cuda, ftmpi, rocm, shortfloat');
		assert.equal(issues.filter((i) => i.severity === 'warning').length, 0);
	});

	it('reports empty, binary and unknown output as issues instead of throwing', () => {
		assert.equal(parseOmpiInfo('').facts, null);
		assert.equal(parseOmpiInfo('').issues[0].severity, 'warning');
		const bin = parseOmpiInfo('\u0000\u0001\u0002garbage');
		assert.equal(bin.facts, null);
		assert.match(bin.issues[0].message, /binary/);
		const unk = parseOmpiInfo('bash: ompi_info: command not found\n');
		assert.equal(unk.facts, null);
		assert.equal(unk.issues[0].evidence[0].line, 'bash: ompi_info: command not found');
	});

	it('flags a parsable output cut before its version line', () => {
		const text = fixtureText('debian12-cpu', 'ompi_info.txt').split('\n').slice(5000, 5100).join('\n');
		const { facts, issues } = parseOmpiInfo(text);
		assert.ok(facts);
		assert.equal(facts.version, null);
		assert.ok(issues.some((i) => /no Open MPI version/.test(i.message)));
	});
});

describe('parseMcaParamFile', () => {
	it('reads Debian\'s openmpi-mca-params.conf with line numbers', () => {
		const { file, issues } = parseMcaParamFile(fixtureText('debian12-cpu', 'mca_params.txt'), '/etc/openmpi/openmpi-mca-params.conf', 'mca_params:/etc/openmpi/openmpi-mca-params.conf');
		const pml = file.settings.find((s) => s.name === 'pml');
		assert.equal(pml?.value, '^ucx');
		assert.equal(pml?.evidence.lineNo, 69);
		assert.equal(pml?.evidence.line, 'pml = ^ucx');
		assert.equal(file.settings.find((s) => s.name === 'btl')?.value, '^uct,openib,ofi');
		assert.equal(file.settings.find((s) => s.name === 'osc')?.evidence.lineNo, 70);
		assert.deepEqual(issues, []);
	});

	it('reports lines that are not name = value', () => {
		const { file, issues } = parseMcaParamFile('# c\npml = ob1\nthis is wrong\n', '/x.conf', 'mca_params:/x.conf');
		assert.equal(file.settings.length, 1);
		assert.equal(issues[0].evidence[0].lineNo, 3);
	});
});
