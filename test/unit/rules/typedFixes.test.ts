/**
 * Fix commands are typed (core/params/fixParams.ts): the MCA parameters, UCX variables and MPICH CVARs a fix sets are
 * checked against the definitions captured from real installations — Open MPI 4.1.4 (Debian 12) and 5.0.7 (the GPU
 * testbed) `ompi_info --parsable --all`, UCX 1.13.1 `ucx_info -c -f` (Debian, no CUDA modules) and `ucx_info -c` (the
 * testbed's CUDA build), MPICH 4.0.2 `mpivars`. Every fix the rules emit on each real stack must be valid there, and
 * analyze never offers one that is not.
 */
import * as assert from 'node:assert/strict';
import { analyze } from '../../../extension/core/analyze';
import { buildFacts } from '../../../extension/core/parsers/buildFacts';
import { RULES, runRules } from '../../../extension/core/rules/index';
import { assignmentProblem, cvarDefs, fitsUcxSyntax, fixAssignments, fixCommandProblems, mcaDefs, paramDefsOf, ucxDefs, type ParamDefs } from '../../../extension/core/params/fixParams';
import type { RawOutput } from '../../../extension/shared/report';
import { debianMpichRaw, debianRaw, fixtureText, h200Raw, rawFromFixture, rawText, seedRaw } from './fixtureRaw';

const OMPI414 = mcaDefs(fixtureText('debian12-cpu', 'ompi_info.txt'));
const OMPI507 = mcaDefs(fixtureText('h200-testbed', 'ompi_info.txt'));
const UCX113_CPU = ucxDefs(fixtureText('debian12-cpu', 'ucx_info_cf.txt'));
const UCX113_CUDA = ucxDefs(fixtureText('h200-testbed', 'ucx_info_c.txt'));
const MPICH402 = cvarDefs(fixtureText('debian12-linkorder', 'mpivars.txt'));
const defs = (p: Partial<ParamDefs>): ParamDefs => ({ mca: null, ucx: null, cvar: null, ...p });

describe('typed fix commands (parameter definitions of real installations)', () => {
	it('reads the assignments of a fix command: --mca / -mca, OMPI_MCA_, UCX_, MPIR_CVAR_; the alternative after a # too', () => {
		assert.deepEqual(fixAssignments('mpirun --mca pml ucx -mca pml_ucx_tls any ...   # or: export OMPI_MCA_pml=ucx'), [
			{ kind: 'mca', name: 'pml', value: 'ucx', alternative: false },
			{ kind: 'mca', name: 'pml_ucx_tls', value: 'any', alternative: false },
			{ kind: 'mca', name: 'pml', value: 'ucx', alternative: true }]);
		assert.deepEqual(fixAssignments('export UCX_TLS=^cuda_ipc MPIR_CVAR_ENABLE_GPU=0 OMPI_MCA_btl=^smcuda MPIR_CVAR_X=-1'), [
			{ kind: 'ucx', name: 'UCX_TLS', value: '^cuda_ipc', alternative: false },
			{ kind: 'cvar', name: 'MPIR_CVAR_ENABLE_GPU', value: '0', alternative: false },
			{ kind: 'mca', name: 'btl', value: '^smcuda', alternative: false },
			{ kind: 'cvar', name: 'MPIR_CVAR_X', value: '-1', alternative: false }]);
		assert.deepEqual(fixAssignments('mpirun --mca pml --oops'), [{ kind: 'mca', name: 'pml', value: null, alternative: false }]);
		// a placeholder is no value (it was read as the value "..." by one of the two readers this one replaced)
		assert.deepEqual(fixAssignments('mpirun --mca pml ... -np 2'), [{ kind: 'mca', name: 'pml', value: null, alternative: false }]);
		assert.deepEqual(fixAssignments("export UCX_TLS='sm,self' OMPI_MCA_x="), [
			{ kind: 'ucx', name: 'UCX_TLS', value: 'sm,self', alternative: false }, { kind: 'mca', name: 'x', value: null, alternative: false }]);
		assert.deepEqual(fixAssignments('ucx_info -v'), []);
	});

	it('reads the definitions: sizes and a few known entries of each capture', () => {
		assert.ok(OMPI414.size > 500 && OMPI507.size > 500, `${OMPI414.size} / ${OMPI507.size}`);
		assert.deepEqual(OMPI414.get('opal_cuda_support'), { type: 'bool', enumerators: ['0', 'false', '1', 'true'] });
		assert.deepEqual(OMPI414.get('mpi_cuda_support'), OMPI414.get('opal_cuda_support'), 'a synonym has its main name\'s definition');
		assert.equal(OMPI507.get('pml_ucx_tls')?.type, 'string');
		assert.equal(UCX113_CPU.get('UCX_RNDV_SCHEME')?.syntax, '[auto|get_zcopy|put_zcopy|get_ppln|put_ppln|am|rkey_ptr]');
		assert.equal(UCX113_CPU.has('UCX_CUDA_COPY_BW'), false, 'no CUDA modules in Debian\'s UCX');
		assert.equal(UCX113_CUDA.has('UCX_CUDA_COPY_BW'), true);
		assert.ok(MPICH402?.has('MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE'));
		assert.equal(cvarDefs('\tMPIR_CVAR_X=1\tSCOPE_ALL_EQ\n'), null, 'a partial listing proves no absence');
	});

	it('refuses what the installation would not take, naming the parameter', () => {
		const o = defs({ mca: OMPI414 });
		assert.match(fixCommandProblems('mpirun --mca btl_smcuda_use_cuda_ipc 1 ...', o)[0], /has no MCA parameter btl_smcuda_use_cuda_ipc/, 'no smcuda CUDA IPC in a build without CUDA');
		assert.deepEqual(fixCommandProblems('mpirun --mca btl_smcuda_use_cuda_ipc 1 ...', defs({ mca: OMPI507 })), []);
		assert.match(fixCommandProblems('export OMPI_MCA_opal_cuda_support=maybe', o)[0], /takes 0, false, 1, true in this Open MPI, not maybe/);
		assert.match(fixCommandProblems('mpirun --mca mpi_leave_pinned sometimes', o)[0], /takes 0, false, 1, true, -1, auto/);
		assert.match(fixCommandProblems('mpirun --mca pml_ucx_priority high', o)[0], /is an integer in this Open MPI, not high/);
		assert.deepEqual(fixCommandProblems('mpirun --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any --mca opal_cuda_support 1', o), []);
		const u = defs({ ucx: UCX113_CPU });
		assert.match(fixCommandProblems('export UCX_RNDV_SCHEME=pipelined', u)[0], /UCX_RNDV_SCHEME takes \[auto\|get_zcopy/);
		assert.match(fixCommandProblems('export UCX_PROTO_ENABLE=maybe', u)[0], /takes <y\|n>/);
		assert.match(fixCommandProblems('export UCX_CUDA_COPY_BW=45000MBps', u)[0], /defines no UCX_CUDA_COPY_BW/);
		assert.deepEqual(fixCommandProblems('export UCX_CUDA_COPY_BW=45000MBps', defs({ ucx: UCX113_CUDA })), []);
		assert.match(fixCommandProblems('export UCX_NO_SUCH_THING=1', u)[0], /defines no UCX_NO_SUCH_THING/);
		assert.deepEqual(fixCommandProblems('export UCX_TLS=^cuda_ipc UCX_MEMTYPE_CACHE=n UCX_RNDV_FRAG_SIZE=host:512K,cuda:4M UCX_PROTO_ENABLE=y UCX_RNDV_THRESH=inf', u), []);
		assert.match(fixCommandProblems('export MPIR_CVAR_NO_SUCH=0', defs({ cvar: MPICH402 }))[0], /defines no MPIR_CVAR_NO_SUCH/);
		assert.equal(assignmentProblem({ kind: 'mca', name: 'x', value: '1' }, defs({})), null, 'nothing collected: nothing claimed');
	});

	it('UCX syntax forms: booleans, ternaries, enums, lists, memory units, bandwidth', () => {
		assert.ok(fitsUcxSyntax('<y|n>', 'yes') && fitsUcxSyntax('<y|n>', 'N') && !fitsUcxSyntax('<y|n>', 'try'));
		// ucs_config_sscanf_bool: never true / false; on / off only from 1.15.0, and only in lower case (strcmp)
		assert.ok(!fitsUcxSyntax('<y|n>', 'true') && !fitsUcxSyntax('<y|n>', 'OFF'));
		assert.ok(fitsUcxSyntax('<y|n>', 'off', true) && !fitsUcxSyntax('<y|n>', 'off', false));
		assert.ok(fitsUcxSyntax('<yes|no|try>', 'maybe') && !fitsUcxSyntax('<yes|no|try>', 'on', false));
		assert.equal(paramDefsOf(debianRaw()).ucxOnOff, false, 'UCX 1.13.1 takes no on / off');
		assert.ok(fitsUcxSyntax('<yes|no|try>', 'try') && !fitsUcxSyntax('<yes|no|try>', 'auto'));
		assert.ok(fitsUcxSyntax('memory units: <number>[b|kb|mb|gb], "inf", or "auto"', '4M') && fitsUcxSyntax('memory units: <number>[b|kb|mb|gb], "inf", or "auto"', 'inf'));
		assert.ok(!fitsUcxSyntax('memory units: <number>[b|kb|mb|gb], "inf", or "auto"', 'lots'));
		assert.ok(fitsUcxSyntax('bandwidth value: <number>[T|G|M|K]B|b[[p|/]s] or "auto"', '10000MBs') && !fitsUcxSyntax('bandwidth value: <number>[T|G|M|K]B|b[[p|/]s] or "auto"', 'fast'));
		assert.ok(fitsUcxSyntax('comma-separated list of: [host|cuda|cuda-managed|rocm|rocm-managed|unknown]', 'host,cuda') && !fitsUcxSyntax('comma-separated list of: [host|cuda|cuda-managed|rocm|rocm-managed|unknown]', 'host,gpu'));
		assert.ok(fitsUcxSyntax('unsigned integer', '16') && !fitsUcxSyntax('unsigned integer', '-1'));
	});

	// Each real stack with the environments that make the env-driven rules fire (a user's own settings), and the
	// definitions captured on that stack.
	const STACKS: Array<{ name: string; raw: RawOutput[]; defs: ParamDefs }> = [
		{ name: 'Debian Open MPI 4.1.4 + UCX 1.13.1', raw: debianRaw(), defs: defs({ mca: OMPI414, ucx: UCX113_CPU }) },
		{ name: 'Debian MPICH 4.0.2 + UCX 1.13.1', raw: [...debianMpichRaw(), rawText('mpivars', fixtureText('debian12-linkorder', 'mpivars.txt')),
			// a program with the CUDA runtime linked statically (ucx-memtype-cache-static-cudart's fix)
			rawText('readelf_d:app', fixtureText('debian12-linkorder', 'readelf-d-app-cudart-static.txt')), rawText('readelf_s:app', fixtureText('debian12-linkorder', 'readelf-s-cudaFree-app-cudart-static.txt'))], defs: defs({ ucx: UCX113_CPU, cvar: MPICH402 }) },
		{ name: 'H200 testbed Open MPI 5.0.7 + UCX 1.13.1 (CUDA)', raw: h200Raw(), defs: defs({ mca: OMPI507, ucx: UCX113_CUDA }) },
	];
	const ENVS = ['', 'UCX_TLS=rc,sm\n', 'OMPI_MCA_btl_smcuda_use_cuda_ipc=0\n', 'OMPI_MCA_pml=ob1\n', 'UCX_RNDV_SCHEME=put_zcopy\nUCX_RNDV_FRAG_MEM_TYPE=cuda\n', 'MPIR_CVAR_ENABLE_GPU=0\n',
		'UCX_MEM_CUDA_HOOK_MODE=reloc\n', 'UCX_CUDA_COPY_DMABUF=no\n', 'MPIR_CVAR_NOLOCAL=1\n', 'FI_MR_CACHE_MONITOR=uffd\n'];

	it('every fix command the rules emit on each real stack (and with the users\' settings that trigger them) is valid there', function () {
		this.timeout(30_000); // 30 analyses: about 1.5 s alone, several times that on a loaded machine
		let checked = 0;
		for (const s of STACKS) {
			for (const env of ENVS) {
				const raw = env ? [...s.raw.filter(r => r.id !== 'env'), rawText('env', `${s.raw.find(r => r.id === 'env')?.stdout ?? ''}${env}`)] : s.raw;
				for (const f of runRules(RULES, buildFacts(raw, 'host'))) {
					const command = f.fix?.command;
					if (typeof command !== 'string') { continue; }
					checked += fixAssignments(command).length;
					assert.deepEqual(fixCommandProblems(command, s.defs), [], `${s.name}${env ? ` with ${env.trim()}` : ''}: ${f.id}: ${command}`);
				}
			}
		}
		assert.ok(checked >= 10, `only ${checked} assignments were checked`);
	});

	it('ompi-smcuda-cuda-ipc-disabled: quiet where this Open MPI has no such parameter (built without CUDA); fires where it has', () => {
		const withEnv = (raw: RawOutput[]) => [...raw.filter(r => r.id !== 'env'), rawText('env', `${raw.find(r => r.id === 'env')?.stdout ?? ''}OMPI_MCA_btl_smcuda_use_cuda_ipc=0\n`)];
		assert.ok(!analyze(withEnv(debianRaw()), 'host').findings.some(f => f.id === 'ompi-smcuda-cuda-ipc-disabled'), 'Debian 4.1.4 has no btl_smcuda_use_cuda_ipc');
		const f = analyze(withEnv(h200Raw()), 'host').findings.find(x => x.id === 'ompi-smcuda-cuda-ipc-disabled');
		assert.equal(f?.fix?.command, 'mpirun --mca btl_smcuda_use_cuda_ipc 1 ...');
	});

	it('analyze types the fixes with the host\'s own collected definitions and never offers an invalid one', () => {
		// The H200 stack's ucx-cuda-copy-bw-model fix (UCX_CUDA_COPY_BW) with the Debian UCX's `ucx_info -c` as that
		// host's collected output (a CUDA rule on a UCX without CUDA modules): not offered as a command, and why.
		const raw = [...h200Raw(), rawFromFixture('debian12-cpu', 'ucx_info_c', 'ucx_info_cf.txt', ['ucx_info', '-c'])];
		assert.ok(paramDefsOf(raw).ucx?.size);
		const f = analyze(raw, 'host').findings.find(x => x.id === 'ucx-cuda-copy-bw-model');
		assert.ok(f, 'the rule fires on the H200 stack');
		assert.equal(f.fix?.command, undefined);
		assert.match(f.fix?.text ?? '', /Not offered as a command on this host: this UCX defines no UCX_CUDA_COPY_BW/);
		// With the testbed's own ucx_info -c the same fix is offered.
		const ok = analyze([...h200Raw(), rawFromFixture('h200-testbed', 'ucx_info_c', 'ucx_info_c.txt', ['ucx_info', '-c'])], 'host').findings.find(x => x.id === 'ucx-cuda-copy-bw-model');
		assert.match(ok?.fix?.command ?? '', /^export UCX_CUDA_COPY_BW=/);
		for (const r of [seedRaw(), debianRaw()]) { assert.ok(analyze(r, 'host').findings.length > 0); }
	});
});
