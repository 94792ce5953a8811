/**
 * Reproducer results webview client: asks the host for its state with `ready`, renders the results with
 * render.ts, follows showRepro/reproBusy events, and turns clicks into `copyBugReport` / `copy` requests.
 * No inline script or style: the CSP allows only this nonce'd bundle and repro.css.
 */
import {
	DEFAULT_REPRO_STRINGS, REPRO_PROTOCOL, type ReproPanelData, type ReproRequests, type ToReproWebviewMessage,
} from '../../extension/shared/reproProtocol';
import { WebviewClient } from '../../extension/shared/webviewRpc';
import { fill, readStrings } from '../../extension/shared/webviewStrings';
import { renderReproHtml } from './render';

interface VsCodeApi { postMessage(message: unknown): void }
declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const strings = readStrings(DEFAULT_REPRO_STRINGS, document.body.dataset.strings);
const content = document.getElementById('content');
const busyEl = document.getElementById('busy');
const copyButton = document.getElementById('copy-bug-report') as HTMLButtonElement | null;
const saveButton = document.getElementById('save-results') as HTMLButtonElement | null;

const rpc = new WebviewClient<ToReproWebviewMessage, ReproRequests>(env => vscode.postMessage(env), REPRO_PROTOCOL, msg => {
	if (msg.type === 'showRepro') { show(msg.data); } else { setBusy(msg.busy, msg.message); }
});

// Every message from the host passes REPRO_PROTOCOL's check first; anything else is dropped.
window.addEventListener('message', ev => { rpc.receive(ev.data); });

let busyNow = false;

/** The placeholder before any result: what to run, or, while a run is in flight, that it runs. */
function placeholderText(): string { return busyNow ? strings.running : strings.noResults; }

function show(data: ReproPanelData | null): void {
	if (!content) { return; }
	if (!data) {
		content.textContent = '';
		const p = document.createElement('p');
		p.className = 'placeholder';
		p.textContent = placeholderText();
		content.appendChild(p);
		if (copyButton) { copyButton.disabled = true; }
		if (saveButton) { saveButton.disabled = true; }
		return;
	}
	// renderReproHtml escapes every value; the CSP forbids inline script regardless.
	content.innerHTML = renderReproHtml(data);
	document.body.dataset.state = 'results';
	if (copyButton) { copyButton.disabled = false; }
	if (saveButton) { saveButton.disabled = false; }
}

function setBusy(busy: boolean, message: string): void {
	busyNow = busy;
	if (busyEl) { busyEl.hidden = !busy; busyEl.textContent = message; }
	const placeholder = content?.querySelector('p.placeholder');
	if (placeholder) { placeholder.textContent = placeholderText(); }
	document.body.dataset.busy = busy ? 'true' : 'false';
}

document.addEventListener('click', ev => {
	const target = ev.target instanceof Element ? ev.target : null;
	if (target?.closest('#save-results')) {
		void rpc.request({ type: 'saveResults' }).catch(() => undefined);
		return;
	}
	if (target?.closest('#copy-bug-report') && copyButton) {
		const label = copyButton.textContent ?? '';
		rpc.request({ type: 'copyBugReport' }).then(
			r => { copyButton.textContent = fill(strings.copiedChars, r.chars); setTimeout(() => { copyButton.textContent = label; }, 2500); },
			e => { copyButton.textContent = fill(strings.copyFailedBecause, e instanceof Error ? e.message : String(e)); },
		);
		return;
	}
	const mark = target?.closest<HTMLButtonElement>('button.trial, button.open-log');
	if (mark) {
		const trial = Number(mark.dataset.trial);
		rpc.request({ type: 'openTrialLog', config: mark.dataset.config ?? '', variant: mark.dataset.variant ?? '', trial }).then(
			() => { mark.classList.add('opened'); },
			(e: unknown) => { mark.title = `Cannot open the log: ${e instanceof Error ? e.message : String(e)}`; },
		);
		return;
	}
	const ex = target?.closest<HTMLButtonElement>('button.open-example');
	if (ex) {
		rpc.request({ type: 'openExample' }).then(() => { ex.classList.add('opened'); }, (e: unknown) => { ex.title = `Cannot open it: ${e instanceof Error ? e.message : String(e)}`; });
		return;
	}
	const ev2 = target?.closest<HTMLButtonElement>('button.copy-evidence');
	if (ev2) {
		rpc.request({ type: 'copy', text: ev2.dataset.copy ?? '' }).then(() => { ev2.textContent = strings.copied; }, () => { ev2.textContent = strings.copyFailed; });
	}
});

rpc.request({ type: 'ready' }).then(
	r => { setBusy(r.busy, ''); show(r.data); },
	err => { if (content) { content.textContent = String(err instanceof Error ? err.message : err); } },
);
