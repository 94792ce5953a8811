/**
 * A multi-step input (after VS Code's own quickinput sample): one QuickPick or InputBox per step, titled with the
 * step counter ("2/5"), a Back button from step 2 on, Escape cancelling the whole flow. Each step is a function that
 * reads and writes the flow's state and returns the next step (or undefined when done), so a step can be skipped
 * (the custom-path box only after "Other launcher…") and Back returns to the step actually shown before.
 */
import * as vscode from 'vscode';

/** One step: show an input through `input`, update the state, return the next step or undefined (done). */
export type Step<S> = (input: MultiStepInput, state: S) => Promise<Step<S> | undefined>;

class BackSignal extends Error { constructor() { super('back'); } }
class CancelSignal extends Error { constructor() { super('cancel'); } }

export interface PickOptions<T extends vscode.QuickPickItem> {
	title: string;
	placeholder?: string;
	items: readonly T[];
	/** Pre-selected items (canPickMany) or the active one. */
	selected?: readonly T[];
	canPickMany?: boolean;
}

export interface BoxOptions {
	title: string;
	prompt: string;
	value: string;
	placeholder?: string;
	/** An error message, or undefined/null/'' when the value is fine. */
	validate: (value: string) => string | undefined | null;
}

/** Runs steps; `totalSteps` is the counter's denominator (an estimate when steps are optional). */
export class MultiStepInput {
	private _step = 0;

	private constructor(private readonly _totalSteps: number) {}

	/** Run the flow from `first`; resolves true when every step finished, false when cancelled. */
	static async run<S>(first: Step<S>, state: S, totalSteps: number): Promise<boolean> {
		const input = new MultiStepInput(totalSteps);
		const history: Step<S>[] = [];
		let step: Step<S> | undefined = first;
		while (step) {
			history.push(step);
			input._step = history.length;
			try {
				step = await step(input, state);
			} catch (e) {
				if (e instanceof BackSignal) {
					history.pop();
					step = history.pop();
				} else if (e instanceof CancelSignal) {
					return false;
				} else {
					throw e;
				}
			}
		}
		return true;
	}

	private _title(title: string): string {
		return `${title} (${this._step}/${Math.max(this._step, this._totalSteps)})`;
	}

	/** One QuickPick; resolves to the picked items (one unless canPickMany). */
	pick<T extends vscode.QuickPickItem>(o: PickOptions<T>): Promise<T[]> {
		const qp = vscode.window.createQuickPick<T>();
		qp.title = this._title(o.title);
		qp.placeholder = o.placeholder;
		qp.items = o.items;
		qp.canSelectMany = o.canPickMany ?? false;
		qp.ignoreFocusOut = true;
		if (o.selected && o.selected.length > 0) {
			if (qp.canSelectMany) { qp.selectedItems = o.selected; } else { qp.activeItems = [o.selected[0]]; }
		}
		qp.buttons = this._step > 1 ? [vscode.QuickInputButtons.Back] : [];
		return this._show(qp, resolve => {
			const picked = qp.canSelectMany ? [...qp.selectedItems] : [...qp.activeItems].slice(0, 1);
			if (picked.length > 0) { resolve(picked); }
		});
	}

	/** One InputBox; resolves to the (validated) value. */
	box(o: BoxOptions): Promise<string> {
		const ib = vscode.window.createInputBox();
		ib.title = this._title(o.title);
		ib.prompt = o.prompt;
		ib.value = o.value;
		ib.placeholder = o.placeholder;
		ib.ignoreFocusOut = true;
		ib.buttons = this._step > 1 ? [vscode.QuickInputButtons.Back] : [];
		const check = (): boolean => {
			const err = o.validate(ib.value.trim());
			ib.validationMessage = err || undefined;
			return !err;
		};
		ib.onDidChangeValue(() => { check(); });
		return this._show(ib, resolve => { if (check()) { resolve(ib.value.trim()); } });
	}

	private _show<R>(input: vscode.QuickPick<vscode.QuickPickItem> | vscode.InputBox, accept: (resolve: (r: R) => void) => void): Promise<R> {
		return new Promise<R>((resolve, reject) => {
			let settled = false;
			const subs: vscode.Disposable[] = [];
			const done = (f: () => void): void => { if (settled) { return; } settled = true; f(); subs.forEach(s => s.dispose()); input.dispose(); };
			subs.push(
				input.onDidAccept(() => accept(r => done(() => resolve(r)))),
				input.onDidTriggerButton(b => { if (b === vscode.QuickInputButtons.Back) { done(() => reject(new BackSignal())); } }),
				input.onDidHide(() => done(() => reject(new CancelSignal()))),
			);
			input.show();
		});
	}
}
