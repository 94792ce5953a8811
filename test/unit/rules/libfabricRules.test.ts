/**
 * libfabric / Slingshot rules (rules/libfabricRules.ts) and the fi_info parser on REAL fi_info output: Debian 12's
 * libfabric 1.17.0 (test-fixtures/tools/debian12-libfabric/README.md), beside Debian's and the H200 testbed's real
 * tool outputs; the CXI message quoted from CSCS's documentation (public-quotes). No CXI hardware and no CUDA-enabled
 * libfabric were available: the firing cases are this machine's real "CUDA not supported", and the quiet cases real
 * outputs in which nothing is wrong or nothing was run.
 */
import * as assert from 'node:assert/strict';
import { analyze } from '../../../extension/core/analyze';
import { buildFacts } from '../../../extension/core/parsers/buildFacts';
import { parseFiInfoList, parseFiInfoRaw, emptyLibfabric } from '../../../extension/core/parsers/fiInfo';
import type { Finding, RawOutput } from '../../../extension/shared/report';
import { debianMpichRaw, debianRaw, fixtureText, h200Engine, h200Raw, rawMissing, rawText, silentDataDoc } from './fixtureRaw';

const LF = 'debian12-libfabric';

/** The collector's three fi_info outputs as captured (stderr of the FI_HMEM run from `stderrFile`). */
function fiInfo(opts: { hmem?: string; stderr?: string; exitCode?: number } = {}): RawOutput[] {
	return [
		rawText('fi_info_hmem', fixtureText(LF, opts.hmem ?? 'fi_info_hmem.txt'), { command: ['/usr/bin/fi_info', '-c', 'FI_HMEM'], stderr: fixtureText(LF, opts.stderr ?? 'fi_info_hmem.stderr.txt'), exitCode: opts.exitCode ?? 0 }),
		rawText('fi_info_version', fixtureText(LF, 'fi_info_version.txt'), { command: ['/usr/bin/fi_info', '--version'] }),
		rawText('fi_info', fixtureText(LF, 'fi_info.txt'), { command: ['/usr/bin/fi_info'] }),
	];
}
const ids = (fs: Finding[]): string[] => fs.map((f) => f.id);
function find(raw: RawOutput[], id: string): Finding[] { return analyze(raw, 'test').findings.filter((f) => f.id === id); }

describe('fi_info parser (real libfabric 1.17.0 output)', () => {
	it('reads the provider/domain pairs, the version, the GPU interfaces and the variables libfabric read', () => {
		const lf = buildFacts(fiInfo({ stderr: 'fi_info_hmem-monitor-userfaultfd.stderr.txt' }), 'x').libfabric;
		assert.ok(lf);
		assert.equal(lf.version?.value, '1.17.0');
		assert.deepEqual(lf.hmemProviders?.map((p) => `${p.provider}/${p.domain}`), ['shm/shm']);
		assert.equal(lf.providers?.length, 97);
		assert.ok(lf.providers?.some((p) => p.provider === 'tcp;ofi_rxm' && p.domain === 'lo'));
		assert.deepEqual(lf.hmemIfaces.map((i) => `${i.iface}:${i.state}`), ['FI_HMEM_CUDA:not supported', 'FI_HMEM_ROCR:not supported', 'FI_HMEM_ZE:not supported', 'FI_HMEM_NEURON:not supported', 'FI_HMEM_SYNAPSEAI:not supported']);
		assert.match(lf.hmemIfaces[0].evidence.line, /^libfabric:\d+:\d+::core:core:ofi_hmem_init\(\):247<info> Hmem iface FI_HMEM_CUDA not supported$/);
		assert.equal(lf.logSeen, true);
		assert.equal(lf.hmemRun.state, 'ok');
		assert.deepEqual(lf.settingsRead.find((s) => s.name === 'mr_cache_monitor')?.value, 'userfaultfd');
	});

	it('exit 61 with "fi_getinfo: -61" is "no provider matches", not a failure', () => {
		const f = buildFacts(fiInfo({ hmem: 'fi_info_hmem-provider-cxi.txt', stderr: 'fi_info_hmem-provider-cxi.stderr.txt', exitCode: 61 }), 'x');
		assert.equal(f.libfabric?.hmemRun.state, 'no match');
		assert.deepEqual(f.libfabric?.hmemProviders, []);
		assert.match(f.libfabric?.hmemRun.evidence?.line ?? '', /^fi_getinfo: -61/);
		assert.equal(f.issues.filter((i) => i.source.startsWith('fi_info')).length, 0);
	});

	it('a missing fi_info is "not installed": no facts claimed, no issue, no finding', () => {
		const raw = [rawMissing('fi_info_hmem'), rawMissing('fi_info_version'), rawMissing('fi_info')];
		const a = analyze([...debianRaw(), ...raw], 'x');
		assert.equal(a.facts.libfabric?.hmemRun.state, 'not installed');
		assert.equal(a.facts.libfabric?.hmemProviders, null);
		assert.equal(a.findings.filter((f) => /fi_info|libfabric/.test(`${f.id} ${f.message}`)).length, 0, ids(a.findings).join());
	});

	it('output that is not fi_info\'s is a parse finding that says so (and claims nothing)', () => {
		const junk = rawText('fi_info_hmem', 'Segmentation fault (core dumped)\nsomething else\n', { command: ['fi_info', '-c', 'FI_HMEM'] });
		const a = analyze([junk], 'x');
		const p = a.findings.filter((f) => f.id === 'parse-problem');
		assert.equal(p.length, 1);
		assert.match(p[0].message, /^fi_info -c FI_HMEM: its output is not in fi_info's format \(no "provider: <name>" line\); which libfabric providers exist and which accept GPU memory is not known\.$/);
		assert.equal(a.facts.libfabric?.hmemProviders, null);
		assert.deepEqual(parseFiInfoList('', 'x'), { entries: [], bad: false });
		const lf = emptyLibfabric();
		assert.equal(parseFiInfoRaw(rawText('fi_info', '\u0000\u0001binary'), lf)[0].message, 'fi_info: the output looks binary, not fi_info\'s text; libfabric\'s facts from it are missing.');
	});
});

describe('libfabric-no-cuda-memory', () => {
	it('fires on Debian\'s libfabric (CUDA interface "not supported", shm still listed): info without a GPU, naming Open MPI\'s ofi components', () => {
		const f = find([...debianRaw(), ...fiInfo()], 'libfabric-no-cuda-memory');
		assert.equal(f.length, 1);
		assert.equal(f[0].severity, 'info');
		assert.match(f[0].message, /^libfabric 1\.17\.0 here cannot take CUDA memory: its CUDA interface returned "not supported": either this libfabric was built without CUDA .* \(no GPU is visible here either/);
		assert.match(f[0].message, /fi_info -c FI_HMEM still lists shm: shm lists FI_HMEM whether or not any GPU interface started/);
		assert.match(f[0].message, /The MPI here has components that run over libfabric \(Open MPI's mtl ofi; Open MPI's btl ofi\)/);
		assert.match(f[0].evidence[0].line, /Hmem iface FI_HMEM_CUDA not supported$/);
		assert.equal(f[0].fix?.command, 'FI_LOG_LEVEL=info fi_info -c FI_HMEM 2>&1 | grep -i -E "hmem|cuda"');
		assert.ok(f[0].sources?.some((s) => s.url.endsWith('/prov/shm/src/smr_attr.c') && s.quote === '.next = &smr_hmem_info,'));
	});

	it('is a warning where a GPU is visible and the MPI runs over libfabric (the H200\'s engine and nvidia-smi beside Debian\'s ompi_info and fi_info)', () => {
		// Outputs of two real machines put together: the GPU side of the H200, the MPI and libfabric of Debian.
		const raw = [...debianRaw().filter((r) => r.id !== 'engine'), ...h200Raw().filter((r) => r.id.startsWith('nvidia_smi')), h200Engine('inspect-np1.json'), ...fiInfo()];
		const f = find(raw, 'libfabric-no-cuda-memory');
		assert.equal(f.length, 1);
		assert.equal(f[0].severity, 'warning');
		assert.match(f[0].message, /this host shows 1 GPU\(s\), so the build is the likelier reason/);
	});

	it('is quiet where fi_info was not installed, where it was not collected, and where no provider matched but no log was kept', () => {
		assert.equal(find([...debianRaw(), rawMissing('fi_info_hmem')], 'libfabric-no-cuda-memory').length, 0);
		assert.equal(find(h200Raw(), 'libfabric-no-cuda-memory').length, 0);
		assert.equal(find(debianMpichRaw(), 'libfabric-no-cuda-memory').length, 0);
		const noLog = fiInfo().map((r) => (r.id === 'fi_info_hmem' ? { ...r, stderr: '' } : r));
		const a = analyze([...debianRaw(), ...noLog], 'x');
		assert.equal(a.facts.libfabric?.logSeen, false);
		assert.equal(a.findings.filter((f) => f.id === 'libfabric-no-cuda-memory').length, 0);
	});
});

describe('libfabric-probe-hung', () => {
	it('a timed-out fi_info is this finding (with what it means), not a generic parse problem', () => {
		const hung: RawOutput = { id: 'fi_info_hmem', command: ['/usr/bin/fi_info', '-c', 'FI_HMEM'], exitCode: null, stdout: '', stderr: '', durationMs: 30012, error: 'timed out after 30 s', timedOut: true };
		const a = analyze([...debianRaw(), hung], 'x');
		const f = a.findings.filter((x) => x.id === 'libfabric-probe-hung');
		assert.equal(f.length, 1);
		assert.equal(f[0].severity, 'warning');
		assert.match(f[0].message, /^fi_info -c FI_HMEM did not finish \(timed out after 30 s, stopped after 30 s\)\. .*MPI over libfabric at MPI_Init/);
		assert.equal(a.findings.filter((x) => x.id === 'parse-problem' && /fi_info/.test(x.message)).length, 0);
		assert.equal(find([...debianRaw(), ...fiInfo()], 'libfabric-probe-hung').length, 0, 'quiet when fi_info answered');
	});
});

describe('libfabric-mr-cache-monitor', () => {
	it('explains a valid value with what libfabric read (CSCS\'s userfaultfd)', () => {
		const raw = [...debianRaw().filter((r) => r.id !== 'env'), rawText('env', fixtureText(LF, 'env-fi-settings.txt')), ...fiInfo({ stderr: 'fi_info_hmem-monitor-userfaultfd.stderr.txt' })];
		const f = find(raw, 'libfabric-mr-cache-monitor');
		assert.equal(f.length, 1);
		assert.equal(f[0].severity, 'info');
		assert.match(f[0].message, /^FI_MR_CACHE_MONITOR=userfaultfd \(collector environment\): the kernel's userfaultfd reports/);
		assert.deepEqual(f[0].evidence.map((e) => e.line.replace(/^libfabric:\d+:\d+/, 'libfabric')), ['FI_MR_CACHE_MONITOR=userfaultfd', 'libfabric::core:core:fi_param_get_():287<info> read string var mr_cache_monitor=userfaultfd']);
	});
	it('a name libfabric does not compare (uffd) is a warning: it keeps its default silently', () => {
		const raw = [...debianRaw().filter((r) => r.id !== 'env'), rawText('env', fixtureText(LF, 'env-fi-monitor-uffd.txt')), ...fiInfo({ stderr: 'fi_info_hmem-monitor-uffd.stderr.txt' })];
		const f = find(raw, 'libfabric-mr-cache-monitor');
		assert.equal(f.length, 1);
		assert.equal(f[0].severity, 'warning');
		assert.match(f[0].message, /^FI_MR_CACHE_MONITOR=uffd .* is not a monitor libfabric knows: .* \(it did read the value: "read string var mr_cache_monitor=uffd"\)/);
		assert.equal(f[0].fix?.command, 'unset FI_MR_CACHE_MONITOR');
	});
	it('is quiet when nothing sets it (Debian and the H200 testbed as captured)', () => {
		assert.equal(find([...debianRaw(), ...fiInfo()], 'libfabric-mr-cache-monitor').length, 0);
		assert.equal(find(h200Raw(), 'libfabric-mr-cache-monitor').length, 0);
	});
});

describe('libfabric-cxi-map-write-error', () => {
	const rankErr = (stderr: string): RawOutput => ({ ...h200Engine('inspect-np1.json'), stderr });
	it('fires on the CXI message CSCS documents, with CSCS\'s switch as the fix', () => {
		const f = find([...h200Raw(), rankErr(fixtureText('public-quotes', 'cscs_cxil_map_write_error.txt'))], 'libfabric-cxi-map-write-error');
		assert.equal(f.length, 1);
		assert.equal(f[0].evidence[0].line, 'cxil_map: write error');
		assert.equal(f[0].fix?.command, 'export FI_CXI_SAFE_DEVMEM_COPY_THRESHOLD=0');
	});
	it('says the documented cause is ruled out when the threshold is already 0', () => {
		const raw = [...h200Raw().filter((r) => r.id !== 'env'), rawText('env', fixtureText(LF, 'env-fi-settings.txt')), rankErr(fixtureText('public-quotes', 'cscs_cxil_map_write_error.txt'))];
		const f = find(raw, 'libfabric-cxi-map-write-error');
		assert.match(f[0].message, /It is already 0 here \(collector environment\): the cause is elsewhere/);
		assert.equal(f[0].fix?.command, undefined);
	});
	it('is quiet without the message', () => {
		assert.equal(find([...h200Raw(), h200Engine('inspect-np1.json')], 'libfabric-cxi-map-write-error').length, 0);
	});
});

describe('libfabric on the GPU machine (scripts/gpu/silentData.sh → test-fixtures/tools/gpu-silentdata/silentData.json)', () => {
	it('its fi_info (when installed there): the finding fires exactly when libfabric\'s log says its CUDA interface did not start', function () {
		const doc = silentDataDoc();
		if (!doc?.fi_info.installed || !doc.fi_info.hmem || !doc.fi_info.version || !doc.fi_info.plain) { this.skip(); }
		const raw = [...h200Raw(), h200Engine('inspect-np1.json'),
			rawText('fi_info_hmem', doc.fi_info.hmem.stdout, { command: ['fi_info', '-c', 'FI_HMEM'], stderr: doc.fi_info.hmem.stderr, exitCode: doc.fi_info.hmem.rc }),
			rawText('fi_info_version', doc.fi_info.version.stdout, { command: ['fi_info', '--version'], exitCode: doc.fi_info.version.rc }),
			rawText('fi_info', doc.fi_info.plain.stdout, { command: ['fi_info'], exitCode: doc.fi_info.plain.rc })];
		const notStarted = /Hmem iface FI_HMEM_CUDA not supported|Failed to initialize hmem iface FI_HMEM_CUDA/.test(doc.fi_info.hmem.stderr);
		assert.equal(find(raw, 'libfabric-no-cuda-memory').length, notStarted ? 1 : 0);
	});
});
