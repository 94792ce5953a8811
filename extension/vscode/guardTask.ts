/**
 * The `gpumpi-guard` task type: a tasks.json entry `{ "type": "gpumpi-guard", "program": "./build/app", "args": [...],
 * "np": 4, "mode": "report" }` runs the program under the guard through the CLI that ships in the extension
 * (bin/gpumpi-doctor.js, run by this extension host's own Node: ELECTRON_RUN_AS_NODE=1), without a shell, in the task's
 * workspace folder; its terminal shows the program's output and the guard's verdict, and the task's exit code is the
 * program's (124–127 are the guard's own: `gpumpi-doctor guard --help`). The recent programs of "Run My Program With Guard…" are offered as detected tasks.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { GuardTaskSpec } from '../core/guard/guardTask';
import { core } from './lazyCore';

export const GUARD_TASK_TYPE = 'gpumpi-guard';

/** The task definition as tasks.json gives it (checked by core guardTaskArgv before it runs). */
export interface GuardTaskDefinition extends vscode.TaskDefinition, GuardTaskSpec { }

/** Provides the detected tasks (recent programs) and resolves tasks.json entries. */
export class GuardTaskProvider implements vscode.TaskProvider {
	constructor(private readonly _extensionPath: string, private readonly _recent: () => string[]) {}

	provideTasks(): vscode.Task[] {
		const folder = vscode.workspace.workspaceFolders?.[0];
		return this._recent().map(program => this.task({ type: GUARD_TASK_TYPE, program }, folder ?? vscode.TaskScope.Workspace));
	}

	resolveTask(task: vscode.Task): vscode.Task | undefined {
		const def = task.definition as GuardTaskDefinition;
		if (def.type !== GUARD_TASK_TYPE) { return undefined; }
		return this.task(def, task.scope ?? vscode.TaskScope.Workspace, task.name);
	}

	/**
	 * The task for a definition; a bad definition becomes a task that prints the problem and fails with 125, the guard's
	 * own code for its usage errors (core/guard/guardResult.ts GUARD_EXIT), so no program exit code is mistaken for it.
	 */
	task(def: GuardTaskDefinition, scope: vscode.WorkspaceFolder | vscode.TaskScope, name?: string): vscode.Task {
		const argv = core().guardTaskArgv(def);
		const cli = path.join(this._extensionPath, 'bin', 'gpumpi-doctor.js');
		const folder = typeof scope === 'object' ? scope : vscode.workspace.workspaceFolders?.[0];
		const cwd = folder?.uri.scheme === 'file' ? folder.uri.fsPath : undefined;
		const label = name ?? vscode.l10n.t('{0} under the guard', typeof def.program === 'string' ? def.program : '?');
		const execution = typeof argv === 'string'
			? new vscode.ProcessExecution(process.execPath, ['-e', 'process.stderr.write(process.argv[1] + "\\n"); process.exit(125)', `gpumpi-guard task: ${argv}`], { env: { ELECTRON_RUN_AS_NODE: '1' } })
			: new vscode.ProcessExecution(process.execPath, [cli, ...argv], { env: { ELECTRON_RUN_AS_NODE: '1' }, ...(cwd ? { cwd } : {}) });
		const t = new vscode.Task(def, scope, label, 'gpumpi-doctor', execution, []);
		t.presentationOptions = { reveal: vscode.TaskRevealKind.Always, clear: true };
		return t;
	}
}
