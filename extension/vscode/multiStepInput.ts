/**
 * A multi-step input (after VS Code's own quickinput sample): one QuickPick or InputBox per step, titled with the
 * step counter ("2/5"), a Back button from step 2 on, Escape cancelling the whole flow. Each step is a function that
 * reads and writes the flow's state and returns the next step (or undefined when done), so a step can be skipped
 * (the custom-path box only after "Other launcher…") and Back returns to the step actually shown before.
 */
import * as vscode from 'vscode';

/** One step: show an input through `input`, update the state, return the next step or undefined (done). */
export type Step<S> = (input: MultiStepInput, state: S) => Promise<Step<S> | undefined>;

/**
 * A scripted answer to the next input (tests only, through the test-mode API): the labels to check / make active in
 * the real QuickPick, or the text typed into the real InputBox (validated as typed; a refused one is recorded and the
 * next answer is typed), or Back / Escape.
 */
export type ScriptedAnswer = { pick: string[] } | { value: string } | 'back' | 'cancel';
/** What a scripted input showed: its title, items (label, description, detail, checked) or validation message. */
export interface ShownInput {
	title: string;
	items?: Array<{ label: string; description?: string; detail?: string; picked: boolean }>;
	/** InputBox: each typed value and the validation message it got ("" when accepted). */
	typed?: Array<{ value: string; validation: string }>;
}

class BackSignal extends Error { constructor() { super('back'); } }
class CancelSignal extends Error { constructor() { super('cancel'); } }

export interface PickOptions<T extends vscode.QuickPickItem> {
	title: string;
	placeholder?: string;
	items: readonly T[];
	/** Pre-selected items (canPickMany) or the active one. */
	selected?: readonly T[];
	canPickMany?: boolean;
	/** canPickMany: accepting with nothing checked is an answer (an empty list), not ignored. */
	allowNone?: boolean;
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
	private static _script: { answers: ScriptedAnswer[]; shown: ShownInput[] } | null = null;

	/** Tests: answer the next inputs from `answers` instead of the user; returns the live list of what was shown. */
	static script(answers: ScriptedAnswer[]): ShownInput[] {
		const shown: ShownInput[] = [];
		MultiStepInput._script = { answers: [...answers], shown };
		return shown;
	}

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
		const accept = (resolve: (r: T[]) => void): void => {
			const picked = qp.canSelectMany ? [...qp.selectedItems] : [...qp.activeItems].slice(0, 1);
			if (picked.length > 0 || (qp.canSelectMany && o.allowNone)) { resolve(picked); }
		};
		return this._show(qp, accept, (answer, shown) => {
			const sel = new Set(qp.selectedItems);
			shown.items = o.items.map(i => ({ label: i.label, description: i.description, detail: i.detail, picked: sel.has(i) }));
			if (typeof answer === 'string' || !('pick' in answer)) { return `a QuickPick (${qp.title}) got ${JSON.stringify(answer)}`; }
			const items = answer.pick.map(l => o.items.find(i => i.label === l));
			const missing = answer.pick.find((_, k) => !items[k]);
			if (missing !== undefined) { return `no item ${JSON.stringify(missing)} in ${qp.title}`; }
			if (qp.canSelectMany) { qp.selectedItems = items as T[]; } else { qp.activeItems = items.slice(0, 1) as T[]; }
			return accept;
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
		const accept = (resolve: (r: string) => void): void => { if (check()) { resolve(ib.value.trim()); } };
		return this._show(ib, accept, (answer, shown, next) => {
			shown.typed = [];
			for (let a: ScriptedAnswer | undefined = answer; a; a = next()) {
				if (typeof a === 'string' || !('value' in a)) { return `an InputBox (${ib.title}) got ${JSON.stringify(a)}`; }
				ib.value = a.value;
				const ok = check();
				shown.typed.push({ value: a.value, validation: ib.validationMessage ? String(ib.validationMessage) : '' });
				if (ok) { return accept; }
			}
			return `no accepted value for ${ib.title}`;
		});
	}

	/**
	 * Show `input`; Enter runs `accept`. Under a script, `scripted` applies the next answer to the real input and returns
	 * the accept to run, or why the answer does not fit (the flow then fails with that message).
	 */
	private _show<R>(input: vscode.QuickPick<vscode.QuickPickItem> | vscode.InputBox, accept: (resolve: (r: R) => void) => void,
		scripted: (answer: ScriptedAnswer, shown: ShownInput, next: () => ScriptedAnswer | undefined) => ((resolve: (r: R) => void) => void) | string): Promise<R> {
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
			const script = MultiStepInput._script;
			if (!script) { return; }
			const shown: ShownInput = { title: input.title ?? '' };
			script.shown.push(shown);
			const answer = script.answers.shift();
			if (answer === undefined) { MultiStepInput._script = null; done(() => reject(new CancelSignal())); return; }
			if (answer === 'back') { done(() => reject(new BackSignal())); return; }
			if (answer === 'cancel') { done(() => reject(new CancelSignal())); return; }
			const r = scripted(answer, shown, () => script.answers.shift());
			if (typeof r === 'string') { done(() => reject(new Error(`scripted input: ${r}`))); return; }
			r(v => done(() => resolve(v)));
		});
	}
}
