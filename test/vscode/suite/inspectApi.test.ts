/**
 * Runs inside the real extension host: the API's inspect() examines THIS machine (real ompi_info, mpirun,
 * ucx_info, the real /etc/openmpi/openmpi-mca-params.conf) and the report must agree with what the test
 * reads from the system itself, independently of the product's parsers.
 */
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import * as vscode from 'vscode';
import type { Report } from '../../../extension/shared/report';
import { REPORT_SCHEMA } from '../../../extension/shared/report';
import { recordMetric } from './metrics';

const EXTENSION_ID = 'gpumpi.gpumpi-doctor';
const MCA_PARAMS = '/etc/openmpi/openmpi-mca-params.conf';

interface DoctorApi { lastReport(): Report | undefined; inspect(): Promise<Report>; panelReady?(): boolean }

/** Open MPI version as `ompi_info --parsable` prints it ("ompi:version:full:4.1.4"); null when not installed. */
function systemOpenMpiVersion(): string | null {
	try {
		const out = execFileSync('ompi_info', ['--parsable'], { encoding: 'utf8', timeout: 30_000 });
		const m = /^ompi:version:full:([0-9][0-9.]*)/m.exec(out);
		return m ? m[1] : null;
	} catch {
		return null;
	}
}

/** `opal_built_with_cuda_support` as ompi_info prints it ("true"/"false"); null when unknown. */
function systemOpenMpiCudaSupport(): string | null {
	try {
		const out = execFileSync('ompi_info', ['--parsable', '--all'], { encoding: 'utf8', timeout: 60_000, maxBuffer: 64 << 20 });
		const m = /mca:(?:opal|mpi):base:param:(?:opal|mpi)_built_with_cuda_support:value:(\w+)/.exec(out);
		return m ? m[1] : null;
	} catch {
		return null;
	}
}

/** The effective `pml = ...` line of the distro MCA params file, or null. */
function systemPmlLine(): string | null {
	try {
		const lines = fs.readFileSync(MCA_PARAMS, 'utf8').split('\n');
		const hit = lines.map((l) => l.trim()).filter((l) => /^pml\s*=/.test(l));
		return hit.length > 0 ? hit[hit.length - 1] : null;
	} catch {
		return null;
	}
}

async function api(): Promise<DoctorApi> {
	const ext = vscode.extensions.getExtension<DoctorApi>(EXTENSION_ID);
	assert.ok(ext, `${EXTENSION_ID} not installed`);
	return ext.activate();
}

describe('inspect() on this host', function () {
	this.timeout(180_000);
	let report: Report;

	before(async () => {
		const doctor = await api();
		const t0 = performance.now();
		report = await doctor.inspect();
		recordMetric('inspectWallMs', performance.now() - t0);
		recordMetric('inspectElapsedMs', report.elapsedMs);
	});

	it('returns a report of the current schema', () => {
		assert.equal(report.schema, REPORT_SCHEMA);
		assert.equal(report.host.kind, 'local');
		assert.ok(Array.isArray(report.findings));
		assert.ok(Array.isArray(report.raw) && report.raw.length > 0, 'raw tool outputs are kept');
	});

	it('lastReport() returns the report inspect() produced', async () => {
		const doctor = await api();
		assert.equal(doctor.lastReport()?.createdAt, report.createdAt);
	});

	it('names the Open MPI version ompi_info reports', function () {
		const version = systemOpenMpiVersion();
		if (version === null) { this.skip(); }
		assert.match(report.summary.mpi.label, new RegExp(`Open MPI ${version!.replace(/\./g, '\\.')}\\b`));
	});

	it('says Open MPI is not CUDA-aware when ompi_info says so, quoting it', function () {
		const cuda = systemOpenMpiCudaSupport();
		if (cuda === null) { this.skip(); }
		assert.equal(report.summary.mpi.cudaAware, cuda === 'true' ? 'yes' : 'no');
		if (cuda === 'false') {
			const f = report.findings.find((x) => x.evidence.some((e) => /built_with_cuda_support/.test(e.line) && /false/.test(e.line)));
			assert.ok(f, `no finding quotes built_with_cuda_support=false; findings: ${report.findings.map((x) => x.id).join(', ')}`);
			assert.notEqual(f.severity, 'info');
		}
	});

	it('explains that the distro MCA params file disables pml ucx, quoting the line', function () {
		const line = systemPmlLine();
		if (line === null || !/\^\s*ucx|\^.*\bucx\b/.test(line)) { this.skip(); }
		const f = report.findings.find((x) => x.evidence.some((e) => e.line.trim() === line && e.source.includes(MCA_PARAMS)));
		assert.ok(f, `no finding quotes "${line}" from ${MCA_PARAMS}; findings: ${report.findings.map((x) => `${x.id} [${x.evidence.map((e) => e.source).join('|')}]`).join(', ')}`);
	});

	it('shows the report in the diagnostics panel, whose webview says ready', async () => {
		const doctor = await api();
		assert.equal(typeof doctor.panelReady, 'function', 'API exposes panelReady()');
		const t0 = Date.now();
		while (!doctor.panelReady!() && Date.now() - t0 < 30_000) { await new Promise((r) => setTimeout(r, 200)); }
		assert.equal(doctor.panelReady!(), true, 'webview did not send ready within 30 s');
	});
});
