/**
 * Runs inside the real extension host: "GPU-MPI: Run My Program With Guard…" with an options object (no questions)
 * runs the real guard_demo under the real mpirun (Open MPI on PATH here) with the guard preloaded: the command
 * resolves to the result with guard_demo's exact per-pair counts, the guard panel (its own tab) shows its findings
 * (the verdict as the headline, "not checked" for a host-buffer program), this machine's inspection, status bar item
 * and Problems stay as they were, and the map panel receives the program's traffic map. Bad options are refused.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { GuardResult } from '../../../extension/core/guard/guardResult';
import type { Report } from '../../../extension/shared/report';

const EXTENSION_ID = 'gpumpi.gpumpi-doctor';
interface MapState { ready: boolean; delivered: string | null; worldSize: number; pairs: number; classes: string[] }
interface DoctorApi {
	lastReport(): Report | undefined; transportMapState?(): MapState | null; lastCommandError?(): string | undefined;
	inspect(host?: string): Promise<Report>; statusBar(): { text: string; tooltip: string; verdict: string; host: string } | undefined;
	problemCountFor(key?: string): number; guardPanelReport(): Report | null;
}

describe('run my program with the guard', function () {
	this.timeout(120_000);
	it('options object: guard_demo on 2 ranks, exact counts, findings in the guard panel (not the inspection\'s), traffic in the map panel', async () => {
		const ext = vscode.extensions.getExtension<DoctorApi>(EXTENSION_ID);
		assert.ok(ext);
		const doctor = await ext.activate();
		// This machine's inspection first: the guard's result must leave it, its status bar item and its Problems as they are.
		const inspection = await doctor.inspect();
		const bar = doctor.statusBar();
		const problems = doctor.problemCountFor();
		assert.equal(problems, inspection.findings.length, 'every finding of the inspection is in Problems');
		const program = path.join(ext.extensionPath, 'native', 'build', 'engine-openmpi', 'examples', 'guard_demo');
		const r = await vscode.commands.executeCommand<GuardResult | undefined>('gpumpiDoctor.runGuard', { program, np: 2, mode: 'report' });
		assert.ok(r, `no result: ${doctor.lastCommandError?.() ?? ''}`);
		assert.equal(r.exitCode, 0, r.notes.join('\n'));
		assert.deepEqual(r.traffic.map(t => [t.a, t.b, t.calls, t.bytes]), [[0, 1, 13, 1840], [1, 0, 13, 1840]]);
		const report = doctor.guardPanelReport();
		assert.ok(report?.headline?.text.startsWith(r.verdict), 'the guard panel shows the guard result');
		assert.deepEqual(report?.findings.map(f => f.id), ['guard-unsupported-calls', 'guard-no-dangers']);
		// guard_demo passes host buffers only: no claim about GPU buffers (it once turned the status bar to "work ✓").
		assert.equal(report?.headline?.verdict, 'not-checked');
		assert.equal(doctor.lastReport(), inspection, 'the inspection is still the one shown');
		assert.deepEqual(doctor.statusBar(), bar, 'the status bar still shows the inspection');
		assert.equal(doctor.problemCountFor(), problems, 'Problems still holds the inspection\'s findings');
		if (inspection.headline?.verdict !== 'works') { assert.ok(!doctor.statusBar()?.text.includes('$(pass)'), doctor.statusBar()?.text); }
		const t0 = Date.now();
		let s = doctor.transportMapState?.() ?? null;
		while (!(s?.ready && s.delivered?.startsWith('gpumpi-guard')) && Date.now() - t0 < 30_000) { await new Promise(res => setTimeout(res, 200)); s = doctor.transportMapState?.() ?? null; }
		assert.ok(s && s.delivered?.startsWith('gpumpi-guard'), JSON.stringify(s));
		assert.equal(s.worldSize, 2);
		assert.deepEqual(s.classes, ['host_memory']);
	});

	it('a program relative to the workspace folder is resolved there, and the run\'s working directory is that folder', async () => {
		const ext = vscode.extensions.getExtension<DoctorApi>(EXTENSION_ID);
		const doctor = await ext!.activate();
		const ws = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
		assert.ok(ws, 'the suite opens a workspace folder');
		const demo = path.join(ext!.extensionPath, 'native', 'build', 'engine-openmpi', 'examples', 'guard_demo');
		const relative = path.relative(ws, demo);
		assert.ok(relative.includes('/') && !relative.startsWith('/'), relative);
		const r = await vscode.commands.executeCommand<GuardResult | undefined>('gpumpiDoctor.runGuard', { program: relative, np: 2, mode: 'report' });
		assert.ok(r, `no result: ${doctor.lastCommandError?.() ?? ''}`);
		assert.equal(r.command[0], demo, 'resolved against the workspace folder');
		assert.equal(r.exitCode, 0, r.notes.join('\n'));
		assert.equal(r.ranks.reported, 2);
		// A command name on PATH is kept for the launcher; the working directory is the workspace folder.
		const pwd = await vscode.commands.executeCommand<GuardResult | undefined>('gpumpiDoctor.runGuard', { program: 'pwd', np: 1, mode: 'report' });
		assert.ok(pwd, `no result: ${doctor.lastCommandError?.() ?? ''}`);
		assert.equal(pwd.command[0], 'pwd');
		assert.equal(pwd.exitCode, 0, pwd.notes.join('\n'));
		assert.equal(doctor.guardPanelReport()?.raw[0]?.stdout.trim(), ws);
	});

	it('the gpumpi-guard task type: a recent program is a detected task; tasks.json entries run through the CLI with the program\'s exit code; a bad definition fails with 125 (the guard\'s own usage error)', async () => {
		const ext = vscode.extensions.getExtension<DoctorApi>(EXTENSION_ID);
		await ext!.activate();
		const demo = path.join(ext!.extensionPath, 'native', 'build', 'engine-openmpi', 'examples', 'guard_demo');
		// A run of the command puts the program on the recent list (the tests above may not have run: a filter).
		assert.ok(await vscode.commands.executeCommand<GuardResult | undefined>('gpumpiDoctor.runGuard', { program: demo, np: 2, mode: 'report' }));
		const tasks = await vscode.tasks.fetchTasks({ type: 'gpumpi-guard' });
		const task = tasks.find(t => (t.definition as { program?: string }).program === demo);
		assert.ok(task, `detected: ${tasks.map(t => JSON.stringify(t.definition)).join(', ')}`);
		const exitOf = async (t: vscode.Task): Promise<number | undefined> => {
			const ended = new Promise<number | undefined>((resolve, reject) => {
				const timer = setTimeout(() => { sub.dispose(); reject(new Error(`task ${t.name} did not end within 90 s`)); }, 90_000);
				const sub = vscode.tasks.onDidEndTaskProcess(e => {
					if (e.execution.task.name !== t.name) { return; }
					clearTimeout(timer); sub.dispose(); resolve(e.exitCode);
				});
			});
			await vscode.tasks.executeTask(t);
			return ended;
		};
		assert.equal(await exitOf(task), 0);
		// tasks.json entries, as a user writes them (the file exists only during this test): a relative program with
		// its ranks, and a bad definition, which runs as a task that names the problem and exits 125 (the guard's own code).
		const ws = vscode.workspace.workspaceFolders![0].uri.fsPath;
		const dir = path.join(ws, '.vscode');
		fs.mkdirSync(dir, { recursive: true });
		fs.writeFileSync(path.join(dir, 'tasks.json'), JSON.stringify({ version: '2.0.0', tasks: [
			{ type: 'gpumpi-guard', label: 'guard demo (tasks.json)', program: path.relative(ws, demo), np: 2, mode: 'report' },
			{ type: 'gpumpi-guard', label: 'bad guard task (tasks.json)', program: demo, np: 0 },
			{ type: 'gpumpi-guard', label: 'failing program (tasks.json)', program: 'sh', args: ['-c', 'exit 3'], np: 1 },
		] }));
		try {
			let fromFile: vscode.Task[] = [];
			for (const t0 = Date.now(); Date.now() - t0 < 20_000; await new Promise(r => setTimeout(r, 300))) {
				fromFile = (await vscode.tasks.fetchTasks({ type: 'gpumpi-guard' })).filter(t => t.name.endsWith('(tasks.json)'));
				if (fromFile.length === 3) { break; }
			}
			assert.equal(fromFile.length, 3, 'every tasks.json entry is a task');
			assert.equal(await exitOf(fromFile.find(t => t.name.startsWith('guard demo'))!), 0);
			assert.equal(await exitOf(fromFile.find(t => t.name.startsWith('bad'))!), 125);
			assert.equal(await exitOf(fromFile.find(t => t.name.startsWith('failing'))!), 3, 'the task ends with the program\'s exit code');
		} finally {
			fs.rmSync(dir, { recursive: true, force: true });
		}
	});

	it('bad options are refused before anything runs', async () => {
		const ext = vscode.extensions.getExtension<DoctorApi>(EXTENSION_ID);
		const doctor = await ext!.activate();
		const r = await vscode.commands.executeCommand<GuardResult | undefined>('gpumpiDoctor.runGuard', { program: '/bin/true', np: 0 });
		assert.equal(r, undefined);
		assert.match(doctor.lastCommandError?.() ?? '', /np must be an integer 1\.\.4096/);
	});
});
