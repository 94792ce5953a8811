/**
 * cray-mpich-gtl-not-linked on real readelf / ldd output of programs built here against STAND-IN libraries named like
 * Cray MPICH's (libmpi_cray.so.12, libmpi_gtl_cuda.so; test-fixtures/tools/debian12-gtl/README.md: no Cray code), a
 * real Debian MPICH program (debian12-linkorder), and Cray MPICH's abort line as CSCS's page quotes it
 * (public-quotes). The `env` lines (MPICH_GPU_SUPPORT_ENABLED, LD_PRELOAD) are written here: they stand for the
 * environment the ranks get, which the collector writes the same way.
 */
import * as assert from 'node:assert/strict';
import { analyze } from '../../../extension/core/analyze';
import type { Finding, RawOutput } from '../../../extension/shared/report';
import { rawFromFixture, rawText } from './fixtureRaw';

const GTL = 'debian12-gtl';
const program = (name: string, withLdd = true): RawOutput[] => [
	rawFromFixture(GTL, `readelf_d:./${name}`, `readelf-d-${name}.txt`, ['readelf', '-d', `./${name}`]),
	...(withLdd ? [rawFromFixture(GTL, `ldd:/tmp/gtl/${name}`, `ldd-${name}.txt`, ['ldd', `/tmp/gtl/${name}`])] : []),
	rawText('program', `program=/tmp/gtl/${name}\nkind=elf\nscript=\n`),
];
const env = (...lines: string[]): RawOutput => rawText('env', lines.join('\n'));
const find = (raw: RawOutput[]): Finding[] => analyze(raw, 'test').findings.filter((f) => f.id === 'cray-mpich-gtl-not-linked');

describe('cray-mpich-gtl-not-linked (stand-in Cray libraries, real readelf / ldd)', () => {
	it('fires: MPICH_GPU_SUPPORT_ENABLED=1, the program loads libmpi_cray.so.12 and no GTL (ldd closure)', () => {
		const f = find([...program('app-nogtl'), env('MPICH_GPU_SUPPORT_ENABLED=1')]);
		assert.equal(f.length, 1);
		assert.equal(f[0].severity, 'error');
		assert.match(f[0].message, /^MPICH_GPU_SUPPORT_ENABLED=1 \(collector environment\) switches Cray MPICH's GPU support on, and \/tmp\/gtl\/app-nogtl uses Cray MPICH \(libmpi_cray\.so\.12\), but none of the libraries the loader resolves for it \(ldd\) is a GTL library/);
		assert.match(f[0].message, /MPI_Init aborts with "MPIDI_CRAY_init: GPU_SUPPORT_ENABLED is requested, but GTL library is not linked"/);
		assert.ok(f[0].evidence.some((e) => e.source === 'ldd:/tmp/gtl/app-nogtl' && /libmpi_cray\.so\.12 => \/tmp\/gtl\/lib\/libmpi_cray\.so\.12/.test(e.line)), JSON.stringify(f[0].evidence));
		assert.ok(f[0].evidence.some((e) => e.source === 'env' && e.line === 'MPICH_GPU_SUPPORT_ENABLED=1'));
		assert.equal(f[0].fix?.command, 'ldd /tmp/gtl/app-nogtl | grep gtl');
		assert.ok(f[0].sources?.some((s) => /eth-cscs\/cscs-docs\/blob\/[0-9a-f]{40}\//.test(s.url) && s.quote?.includes('GTL library is not linked')));
	});

	it('the abort line of a run is named as evidence (Cray MPICH\'s message as CSCS quotes it)', () => {
		const out = rawFromFixture('public-quotes', 'program_output', 'cray_mpich_gtl_not_linked.txt');
		const f = find([...program('app-nogtl'), env('MPICH_GPU_SUPPORT_ENABLED=1'), { ...out, stderr: out.stdout, stdout: '' }]);
		assert.equal(f.length, 1);
		assert.match(f[0].message, /The run printed exactly that\./);
		assert.ok(f[0].evidence.some((e) => /MPIDI_CRAY_init: GPU_SUPPORT_ENABLED is requested/.test(e.line)));
	});

	it('without ldd, only DT_NEEDED: a warning that says a library could still bring the GTL', () => {
		const f = find([...program('app-nogtl', false), env('MPICH_GPU_SUPPORT_ENABLED=1')]);
		assert.equal(f.length, 1);
		assert.equal(f[0].severity, 'warning');
		assert.match(f[0].message, /none of its DT_NEEDED entries \(readelf -d; ldd was not available, so a library it loads could still bring the GTL\)/);
		assert.ok(f[0].evidence.some((e) => e.source === 'readelf_d:./app-nogtl' && /\[libmpi_cray\.so\.12\]/.test(e.line)));
	});

	it('is quiet: the GTL linked, the GTL needed by the site\'s libmpi (closure), preloaded, the switch off or unset', () => {
		assert.equal(find([...program('app-gtl'), env('MPICH_GPU_SUPPORT_ENABLED=1')]).length, 0);
		assert.equal(find([...program('app-gtl', false), env('MPICH_GPU_SUPPORT_ENABLED=1')]).length, 0, 'DT_NEEDED names it');
		assert.equal(find([...program('app-site'), env('MPICH_GPU_SUPPORT_ENABLED=1')]).length, 0, 'eth-cscs/stackinator#174: libmpi needs the GTL');
		assert.equal(find([...program('app-nogtl'), env('MPICH_GPU_SUPPORT_ENABLED=1', 'LD_PRELOAD=/opt/cray/pe/mpich/8.1.30/gtl/lib/libmpi_gtl_cuda.so')]).length, 0);
		assert.equal(find([...program('app-nogtl'), env('MPICH_GPU_SUPPORT_ENABLED=0')]).length, 0);
		assert.equal(find(program('app-nogtl')).length, 0);
	});

	it('is quiet for a program of another MPI (Debian\'s MPICH: libmpich.so.12 reads no MPICH_GPU_SUPPORT_ENABLED)', () => {
		const raw = [rawFromFixture('debian12-linkorder', 'readelf_d:./app-mpi-first', 'readelf-d-app-mpi-first.txt', ['readelf', '-d', './app-mpi-first']), env('MPICH_GPU_SUPPORT_ENABLED=1')];
		assert.equal(find(raw).length, 0);
	});
});
