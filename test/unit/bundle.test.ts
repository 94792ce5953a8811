/**
 * Offline bundles (extension/core/bundle.ts) and the collect / analyze subcommands (extension/cli/bundleCli.ts):
 * round trip of the real H200 and Debian fixture sets, and hostile or broken bundles (hand-made on purpose: they
 * stand for damaged or malicious directories) that must give a clear error naming the file, never a crash.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { analyze } from '../../extension/core/analyze';
import { BUNDLE_SCHEMA, BundleError, MAX_FILE_BYTES, readBundle, readBundleFull, safeName, writeBundle } from '../../extension/core/bundle';
import { analyzeMain, collectMain } from '../../extension/cli/bundleCli';
import { captureIo as cliIo, type CapturedIo } from './cli/captureIo';
import { renderReportText } from '../../extension/cli/textReport';
import { REPORT_SCHEMA, type RawOutput, type Report } from '../../extension/shared/report';
import { debianRaw, h200Engine, h200Raw } from './rules/fixtureRaw';

function reportOf(raw: RawOutput[], label: string): Report {
	const { facts, findings, summary } = analyze(raw, label);
	return {
		schema: REPORT_SCHEMA, tool: { name: 'gpumpi-doctor', version: '0.1.0' }, createdAt: '2026-12-02T09:27:00.000Z',
		host: { id: 'local', label, kind: 'local' }, summary, findings, facts, raw, engine: facts.engine?.document ?? null, probe: null, elapsedMs: 5,
	};
}

function captureIo(cwd: string): CapturedIo { return cliIo(cwd); }

/** Normalise optional fields the way a bundle stores them (absent stays absent). */
function norm(r: RawOutput): RawOutput { return JSON.parse(JSON.stringify(r)) as RawOutput; }

describe('offline bundles', () => {
	let tmp = '';
	beforeEach(() => { tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-bundle-')); });
	afterEach(() => { fs.rmSync(tmp, { recursive: true, force: true }); });

	async function rejects(dir: string, re: RegExp): Promise<void> {
		await assert.rejects(readBundle(dir), (e: unknown) => e instanceof BundleError && re.test(e.message));
	}

	it('round-trips the real H200 fixtures (tools + engine capture) byte for byte', async () => {
		const raw = [...h200Raw(), h200Engine('inspect-np4-nocp.json'), { ...debianRaw().find((r) => r.id === 'mca_params:/etc/openmpi/openmpi-mca-params.conf') as RawOutput, notes: ['read by the collector'] },
			{ id: 'nvidia_smi_xml_timeout', command: ['nvidia-smi', '-q', '-x'], exitCode: null, stdout: '', stderr: 'partial\n', durationMs: 60000, error: 'timed out after 60 s', timedOut: true }];
		const dir = path.join(tmp, 'b');
		const m = await writeBundle(dir, reportOf(raw, 'vm'));
		assert.equal(m.schema, BUNDLE_SCHEMA);
		assert.ok(m.raw.some((e) => e.stdout === 'raw/mca_params__etc_openmpi_openmpi-mca-params_conf.stdout'));
		// People can read the outputs directly.
		assert.equal(fs.readFileSync(path.join(dir, 'raw', 'ompi_info.stdout'), 'utf8'), raw[0].stdout);
		const back = await readBundleFull(dir);
		assert.deepEqual(back.raw, raw.map(norm));
		assert.equal(back.manifest.host.label, 'vm');
		// The analysis of the bundle is the analysis of the original outputs.
		assert.deepEqual(analyze(back.raw, 'vm').findings, analyze(raw, 'vm').findings);
	});

	it('analyze prints the findings exactly as inspect does; collect writes a bundle from the inspection', async () => {
		const original = reportOf([...h200Raw(), h200Engine('inspect-np4-nocp.json')], 'vm');
		const io = captureIo(tmp);
		assert.equal(await collectMain(['--out', 'bdir'], { inspect: () => Promise.resolve(original), io }), 0);
		assert.match(io.out, /^Bundle written to .*bdir \(10 raw outputs\)/);
		const aio = captureIo(tmp);
		assert.equal(await analyzeMain(['bdir'], aio), 0);
		const lines = aio.out.split('\n');
		const expected = renderReportText(original).split('\n');
		assert.deepEqual(lines.slice(1), expected.slice(1), 'everything but the header line (time taken) is identical');
		assert.match(aio.out, /ompi-component-path-overridden/);
		const jio = captureIo(tmp);
		assert.equal(await analyzeMain(['bdir', '--json'], jio), 0);
		const rep = JSON.parse(jio.out) as Report;
		assert.equal(rep.host.kind, 'bundle');
		assert.deepEqual(rep.findings, original.findings);
	});

	it('collect and analyze: usage errors and failures give exit codes 2 and 3', async () => {
		const io = captureIo(tmp);
		assert.equal(await analyzeMain([], io), 2);
		assert.equal(await analyzeMain(['a', 'b'], io), 2);
		assert.equal(await analyzeMain(['--bogus', 'x'], io), 2);
		assert.equal(await analyzeMain([path.join(tmp, 'nope')], io), 3);
		assert.match(io.err, /invalid bundle: .*nope: no such bundle directory/);
		assert.equal(await collectMain(['--out'], { inspect: () => Promise.reject(new Error('x')), io }), 2);
		assert.equal(await collectMain([], { inspect: () => Promise.reject(new Error('mpirun exploded')), io }), 3);
		assert.match(io.err, /the inspection failed: mpirun exploded/);
		fs.writeFileSync(path.join(tmp, 'notes.txt'), 'mine');
		assert.equal(await collectMain(['--out', tmp], { inspect: () => Promise.resolve(reportOf(debianRaw(), 'vm')), io }), 3);
		assert.match(io.err, /refusing to write a bundle into a directory that has other files \(notes\.txt\)/);
	});

	it('file names never carry an id\'s path: ../../etc/passwd becomes raw/______etc_passwd.*', async () => {
		assert.equal(safeName('../../etc/passwd'), '______etc_passwd');
		const dir = path.join(tmp, 'b');
		const raw: RawOutput[] = [{ id: '../../etc/passwd', command: ['cat'], exitCode: 0, stdout: 'x', stderr: '', durationMs: 1 }, { id: '__/__/etc/passwd', command: ['cat'], exitCode: 0, stdout: 'y', stderr: '', durationMs: 1 }];
		const m = await writeBundle(dir, reportOf(raw, 'vm'));
		assert.deepEqual(m.raw.map((e) => e.stdout), ['raw/______etc_passwd.stdout', 'raw/______etc_passwd-2.stdout']);
		assert.deepEqual(fs.readdirSync(tmp), ['b']);
		assert.deepEqual((await readBundle(dir)).map((r) => [r.id, r.stdout]), [['../../etc/passwd', 'x'], ['__/__/etc/passwd', 'y']]);
	});

	describe('malformed bundles give a clear error naming the file', () => {
		let dir = '';
		beforeEach(async () => { dir = path.join(tmp, 'b'); await writeBundle(dir, reportOf(debianRaw().slice(0, 3), 'vm')); });
		const manifestPath = (): string => path.join(dir, 'bundle.json');
		const editManifest = (f: (m: Record<string, unknown>) => void): void => {
			const m = JSON.parse(fs.readFileSync(manifestPath(), 'utf8')) as Record<string, unknown>;
			f(m);
			fs.writeFileSync(manifestPath(), JSON.stringify(m));
		};

		it('missing manifest', async () => { fs.rmSync(manifestPath()); await rejects(dir, /bundle\.json: missing — not a GPU-MPI Doctor bundle/); });
		it('not a directory', async () => { await rejects(manifestPath(), /not a directory/); });
		it('bad JSON', async () => { fs.writeFileSync(manifestPath(), '{"schema": "gpumpi-doctor.bundle/1", '); await rejects(dir, /bundle\.json: not valid JSON/); });
		it('wrong schema', async () => { editManifest((m) => { m.schema = 'something/2'; }); await rejects(dir, /schema is "something\/2", expected "gpumpi-doctor\.bundle\/1"/); });
		it('traversal in a file name', async () => {
			editManifest((m) => { (m.raw as Record<string, unknown>[])[0].stdout = 'raw/../../../etc/passwd.stdout'; });
			await rejects(dir, /raw\[0\]: stdout file "raw\/\.\.\/\.\.\/\.\.\/etc\/passwd\.stdout" is not of the form raw\/<name>\.stdout/);
		});
		it('absolute file name', async () => { editManifest((m) => { (m.raw as Record<string, unknown>[])[1].meta = '/etc/passwd'; }); await rejects(dir, /raw\[1\]: meta file "\/etc\/passwd"/); });
		it('symbolic link pointing outside', async () => {
			const f = path.join(dir, 'raw', 'ompi_info.stdout');
			fs.rmSync(f);
			fs.symlinkSync('/etc/hostname', f);
			await rejects(dir, /ompi_info\.stdout: is a symbolic link/);
		});
		it('huge file', async () => {
			const f = path.join(dir, 'raw', 'ompi_info.stdout');
			fs.truncateSync(f, MAX_FILE_BYTES + 1); // sparse: no real disk use
			await rejects(dir, /ompi_info\.stdout: 67108865 bytes, more than the 67108864-byte limit/);
		});
		it('meta file with wrong types or another id', async () => {
			const meta = path.join(dir, 'raw', 'mpirun_version.json');
			fs.writeFileSync(meta, JSON.stringify({ id: 'mpirun_version', command: 'rm -rf /', exitCode: 0, durationMs: 1 }));
			await rejects(dir, /mpirun_version\.json: "command" must be an array of strings/);
			fs.writeFileSync(meta, JSON.stringify({ id: 'engine', command: [], exitCode: 0, durationMs: 1 }));
			await rejects(dir, /mpirun_version\.json: id "engine" does not match the manifest's "mpirun_version"/);
			fs.writeFileSync(meta, '[1,2');
			await rejects(dir, /mpirun_version\.json: not valid JSON/);
		});
		it('missing output file, duplicate and control-character ids', async () => {
			fs.rmSync(path.join(dir, 'raw', 'mpichversion.stderr'));
			await rejects(dir, /mpichversion\.stderr: missing \(ENOENT\)/);
			editManifest((m) => { const r = m.raw as Record<string, unknown>[]; r[1].id = r[0].id; });
			await rejects(dir, /raw\[1\]: id "ompi_info" is listed twice/);
			editManifest((m) => { (m.raw as Record<string, unknown>[])[0].id = 'a\u001b[2Jb'; });
			await rejects(dir, /raw\[0\]: id contains control characters/);
		});
		it('raw is not an array / host malformed', async () => {
			editManifest((m) => { m.raw = 'all'; });
			await rejects(dir, /"raw" must be an array/);
			editManifest((m) => { m.raw = []; m.host = { id: 1, label: 'x', kind: 'local' }; });
			await rejects(dir, /host: "id" must be a string/);
		});
	});
});
